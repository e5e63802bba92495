/// Bytes to write, copied once into memory that never changes, so that one buffer can be written to
/// any number of connections without copying it again.
///
/// A canned response is the typical use: make it once, write it many times.
///
/// ```swift
/// let response = SharedBytes("HTTP/1.1 204 No Content\r\n\r\n")
/// connection.send(response)   // no copy, no allocation for the bytes
/// ```
public final class SharedBytes: Sendable {
    // Sendable: the memory is written once, in `init`, and only read afterwards.
    nonisolated(unsafe) let base: UnsafeMutableRawPointer
    /// The number of bytes.
    public let count: Int

    /// Copies `bytes`.
    public init(_ bytes: some Collection<UInt8>) {
        count = bytes.count
        base = .allocate(byteCount: max(count, 1), alignment: 1)
        let destination = UnsafeMutableRawBufferPointer(start: base, count: count)
        _ = destination.initializeMemory(as: UInt8.self, from: bytes)
    }

    /// Copies the UTF-8 encoding of `text`.
    public convenience init(_ text: String) {
        self.init(Array(text.utf8))
    }

    /// Copies the bytes `buffer` points to (for instance a chunk handed to a read handler).
    public init(copying buffer: UnsafeRawBufferPointer) {
        count = buffer.count
        base = .allocate(byteCount: max(count, 1), alignment: 1)
        if let source = buffer.baseAddress, count > 0 {
            base.copyMemory(from: source, byteCount: count)
        }
    }

    deinit {
        base.deallocate()
    }

    /// Runs `body` with a view of the bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// The bytes as an array.
    public var array: [UInt8] { withUnsafeBytes { Array($0) } }
}
