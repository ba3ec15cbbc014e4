/* bench: being written */
