/// How much a client may send: a request over a limit is refused with its status code, and the
/// connection closes.
public struct HTTPRequestLimits: Sendable, Equatable {
    /// The longest request head accepted, in bytes, the final blank line included; longer gets `431`.
    public var maximumHeadSize: Int
    /// The most header lines in one head (the request line not counted); more gets `431`.
    public var maximumHeaderCount: Int
    /// The largest `Content-Length` accepted; larger gets `413`.
    public var maximumBodySize: Int

    /// Limits with room for any ordinary client: a 16 KiB head, 100 header lines, a 1 MiB body.
    public init(maximumHeadSize: Int = 16 * 1024, maximumHeaderCount: Int = 100, maximumBodySize: Int = 1024 * 1024) {
        self.maximumHeadSize = max(4, maximumHeadSize)
        self.maximumHeaderCount = max(0, maximumHeaderCount)
        self.maximumBodySize = max(0, maximumBodySize)
    }
}
