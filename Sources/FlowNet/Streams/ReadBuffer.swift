/// The memory libuv reads into, shared by the connections of one loop.
///
/// libuv asks for a buffer right before each read and hands the bytes to the read callback right
/// after, on the loop's thread, one connection at a time: read handlers see the bytes only during
/// their call, so one buffer serves every connection accepted by a listener, however many there are.
package final class ReadBuffer {
    static let defaultSize = 64 * 1024

    let base: UnsafeMutableRawPointer
    let size: Int

    package init(size: Int = ReadBuffer.defaultSize) {
        self.size = size
        base = .allocate(byteCount: size, alignment: 16)
    }

    deinit {
        base.deallocate()
    }
}
