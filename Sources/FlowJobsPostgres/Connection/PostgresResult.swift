import CLibPQ
import FlowJobs
import Foundation

/// What one statement answered: its rows (each column as an `SQLValue`) and how many rows it changed.
package struct PostgresResult: Sendable {
    /// The rows a query returned, each as its columns' values; empty for a command.
    package var rows: [[SQLValue]] = []
    /// The number of rows the command inserted, updated or deleted (`PQcmdTuples`); 0 for a query.
    package var affectedRows: Int = 0

    /// An empty answer.
    init() {}

    /// Reads a `PGRES_TUPLES_OK` or `PGRES_COMMAND_OK` result; the caller clears it.
    init(reading result: OpaquePointer) {
        affectedRows = Int(String(cString: PQcmdTuples(result))) ?? 0
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        guard rowCount > 0 else { return }
        let types = (0..<columnCount).map { PQftype(result, $0) }
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                if PQgetisnull(result, row, column) != 0 {
                    values.append(.null)
                    continue
                }
                let text = String(cString: PQgetvalue(result, row, column))
                values.append(Self.decode(text, type: types[Int(column)]))
            }
            rows.append(values)
        }
    }

    /// A text-format value as the `SQLValue` its type calls for.
    static func decode(_ text: String, type: Oid) -> SQLValue {
        switch type {
        case 20, 21, 23, 26: .integer(Int64(text) ?? 0)  // int8, int2, int4, oid
        case 700, 701, 1700: .real(Double(text) ?? 0)  // float4, float8, numeric
        case 16: .integer(text == "t" ? 1 : 0)  // bool
        case 17: .blob(decodeBytea(text))
        default: .text(text)
        }
    }

    /// `bytea`'s hex output (`\x0a1b…`), the server's default since PostgreSQL 9.0.
    static func decodeBytea(_ text: String) -> Data {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x") else {
            return Data(utf8)
        }
        func nibble(_ byte: UInt8) -> UInt8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: 0
            }
        }
        var bytes = Data(capacity: (utf8.count - 2) / 2)
        var index = 2
        while index + 1 < utf8.count {
            bytes.append(nibble(utf8[index]) << 4 | nibble(utf8[index + 1]))
            index += 2
        }
        return bytes
    }
}

extension PostgresError {
    /// The error a failed result carries: its SQLSTATE and primary message.
    init(failedResult result: OpaquePointer) {
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        let message =
            PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
            ?? String(cString: PQresultErrorMessage(result))
        self = .server(sqlState: state, message: message)
    }
}

/// libpq's last error on a connection, on one line.
func connectionErrorMessage(_ connection: OpaquePointer?) -> String {
    guard let connection, let message = PQerrorMessage(connection) else { return "no connection" }
    return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
        .replacingOccurrences(of: "\n", with: "; ")
}
