/* device: being written */
