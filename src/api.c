/* api: being written */
