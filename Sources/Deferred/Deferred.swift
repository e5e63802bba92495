// The Deferred module; its contents are being written.
