/* epilogue: being written */
