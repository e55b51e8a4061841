/// Bytes as a dictionary key, hashed once over all of them (not byte by
/// byte), compared exactly.
struct ByteKey: Hashable {
    let bytes: [UInt8]
    private let hashCode: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var h = Hasher()
        bytes.withUnsafeBytes { h.combine(bytes: $0) }
        hashCode = h.finalize()
    }

    init(_ buffer: UnsafeRawBufferPointer) { self.init(Array(buffer)) }

    static func == (a: ByteKey, b: ByteKey) -> Bool { a.hashCode == b.hashCode && a.bytes == b.bytes }
    func hash(into h: inout Hasher) { h.combine(hashCode) }
}

/// A map that forgets its oldest entries past `capacity`, so a batch of
/// endless distinct tokens costs bounded memory.
struct BoundedCache<Key: Hashable, Value> {
    let capacity: Int
    private var entries: [Key: Value] = [:]
    private var order: [Key] = []
    private var head = 0

    init(capacity: Int) { self.capacity = capacity }

    subscript(key: Key) -> Value? { entries[key] }

    var count: Int { entries.count }

    mutating func insert(_ value: Value, for key: Key) {
        if entries.updateValue(value, forKey: key) != nil { return }
        if order.count < capacity {
            order.append(key)
        } else {
            entries.removeValue(forKey: order[head])
            order[head] = key
            head = (head + 1) % capacity
        }
    }
}
