/* verify: being written */
