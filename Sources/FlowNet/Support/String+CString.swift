extension String {
    /// Whether C reads this string whole: a NUL byte would end it there, and what follows would be
    /// lost without a word (a path, an argument, a host name cut short names something else).
    package var isWholeCString: Bool { !utf8.contains(0) }
}
