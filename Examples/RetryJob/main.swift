print("This example is being written.")
