// The FlowNet module; its contents are being written.
