/// What a signal offers besides its values: ``Plain`` (nothing), ``Read`` (a current value),
/// ``ReadWrite`` (a current value you can set) or ``Finite`` (an end).
///
/// The kind is a type parameter of ``CoreSignal``, so transforms can say in their types what survives
/// them: a `map` keeps a current value (`Kind.DropWrite`), a `filter` loses it (`Kind.DropReadWrite`).
///
/// ```swift
/// let count = ReadWriteSignal(1)                 // CoreSignal<ReadWrite, Int>
/// let doubled = count.map { $0 * 2 }             // CoreSignal<Read, Int>: still has a value
/// let odd = count.filter { $0 % 2 == 1 }         // CoreSignal<Plain, Int>: no current value
/// ```
public protocol SignalKind: Sendable {
    /// This kind without write access.
    associatedtype DropWrite: SignalKind
    /// This kind without read or write access.
    associatedtype DropReadWrite: SignalKind
    /// This kind once it may have a current value (a finite signal stays finite).
    associatedtype PotentiallyRead: SignalKind
}

extension SignalKind {
    /// Whether signals of this kind have a current value.
    public static var isReadable: Bool { DropWrite.self == Read.self }
}

/// The kind of a signal without a current value or an end: ``Signal``.
public enum Plain: SignalKind {
    /// Without write access: Plain.
    public typealias DropWrite = Plain
    /// Without read or write access: Plain.
    public typealias DropReadWrite = Plain
    /// Once it may have a current value: Read.
    public typealias PotentiallyRead = Read
}

/// The kind of a signal with a read-only current value: ``ReadSignal``.
public enum Read: SignalKind {
    /// Without write access: Read.
    public typealias DropWrite = Read
    /// Without read or write access: Plain.
    public typealias DropReadWrite = Plain
    /// Once it may have a current value: Read.
    public typealias PotentiallyRead = Read
}

/// The kind of a signal with a current value that can be set: ``ReadWriteSignal``.
public enum ReadWrite: SignalKind {
    /// Without write access: Read.
    public typealias DropWrite = Read
    /// Without read or write access: Plain.
    public typealias DropReadWrite = Plain
    /// Once it may have a current value: Read.
    public typealias PotentiallyRead = Read
}

/// The kind of a signal that can end: ``FiniteSignal``.
public enum Finite: SignalKind {
    /// Without write access: Finite.
    public typealias DropWrite = Finite
    /// Without read or write access: Finite.
    public typealias DropReadWrite = Finite
    /// Once it may have a current value: Finite.
    public typealias PotentiallyRead = Finite
}
