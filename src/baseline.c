/* baseline: being written */
