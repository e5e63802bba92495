// The FlowTimers module; its contents are being written.
