/* codegen: being written */
