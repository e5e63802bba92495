print("Supervisor: not written yet")
