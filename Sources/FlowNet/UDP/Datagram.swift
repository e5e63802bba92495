/// A datagram received by a ``UDPSocket``: its bytes and who sent it.
public struct Datagram: Sendable, Hashable {
    /// The bytes, as many as the receive buffer took.
    public let bytes: [UInt8]
    /// The sender's address.
    public let sender: SocketAddress
    /// Whether the datagram was larger than the receive buffer (64 KiB) and was cut.
    public let isTruncated: Bool

    /// Makes a datagram, for tests and examples.
    public init(bytes: [UInt8], sender: SocketAddress, isTruncated: Bool = false) {
        self.bytes = bytes
        self.sender = sender
        self.isTruncated = isTruncated
    }
}
