import CMallocStats
import Foundation
import HTTPOperations

/// Heap bytes held per waiting operation, stage by stage (issue 27, memory): what a caller
/// that enqueues everything at once pays per request before its turn comes.
///
/// Each stage makes `count` objects, keeps them in an array reserved beforehand, and divides
/// the growth of glibc's bytes in use (mallinfo2) by `count`. Nothing touches the network:
/// the operations wait on a suspended queue.
///
/// Usage: `opcost [count]`. Prints one line per stage; fails when a stage measures nothing.
/// `Benchmarks/run` prints it after its tables (and its smoke run runs it once).
@main
struct OpCost {
    static func inUse() -> Int { Int(cmallocstats_read().inUse) }

    /// Bytes per object that `make` leaves alive, measured over `count` of them.
    static func measure<T>(_ count: Int, _ make: (Int) -> T) -> Double {
        var kept: [T] = []
        kept.reserveCapacity(count)
        let before = inUse()
        for index in 0..<count { kept.append(make(index)) }
        let after = inUse()
        withExtendedLifetime(kept) {}
        return Double(after - before) / Double(count)
    }

    static func main() {
        let count = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 20_000 : 20_000
        let url = URL(string: "http://127.0.0.1:18080/small.json")!
        let manager = HTTPRequestOperationManager()
        manager.operationQueue.isSuspended = true
        manager.responseSerializer = HTTPResponseSerializer()
        // Warm-up: first uses allocate caches once.
        _ = measure(100) { _ in manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil) }

        let rows: [(String, Double)] = [
            ("BlockOperation {}", measure(count) { _ in BlockOperation {} }),
            ("URLRequest(url:)", measure(count) { _ in URLRequest(url: url) }),
            ("operation, no blocks", measure(count) { _ in
                manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil) }),
            ("operation + blocks", measure(count) { _ in
                let operation = manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil)
                operation.setCompletionBlockWithSuccess({ _, _ in }, failure: { _, _ in })
                return operation
            }),
            ("operation + blocks, enqueued (suspended)", measure(count) { _ in
                let operation = manager.httpRequestOperation(with: URLRequest(url: url), success: nil, failure: nil)
                operation.setCompletionBlockWithSuccess({ _, _ in }, failure: { _, _ in })
                manager.enqueue(operation)
                return operation
            }),
        ]
        for (name, bytes) in rows { print(name.padding(toLength: 44, withPad: " ", startingAt: 0) + String(format: "%8.0f bytes", bytes)) }
        // Every stage holds something: a stage that measured nothing means the probe failed.
        if rows.contains(where: { $0.1 <= 0 }) {
            FileHandle.standardError.write(Data("opcost: a stage measured no bytes; mallinfo2 is not counting\n".utf8))
            exit(1)
        }
    }
}
