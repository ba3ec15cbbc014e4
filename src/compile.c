/* compile: being written */
