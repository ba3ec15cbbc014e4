/* space: being written */
