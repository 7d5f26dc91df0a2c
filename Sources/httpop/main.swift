import HTTPTestServer
import Foundation
let server = try TestServer.start()
print(server.port)

Thread.sleep(forTimeInterval: 60)
