// The FlowTesting module; its contents are being written.
