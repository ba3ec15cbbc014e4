/* db: being written */
