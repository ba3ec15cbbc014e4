/* json: being written */
