/* tuner: being written */
