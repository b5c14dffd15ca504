import Foundation
import TestSupport
import XCTest

/// The web page's script through Debian's ESLint, with the rules of
/// `Sources/PlugIns/TonearmWeb/Page/.eslintrc.json`: any problem it reports, a warning too, fails.
final class WebPageLintTests: XCTestCase {
    func testThePageScriptPassesESLint() throws {
        guard toolsAvailable("eslint") else {
            throw XCTSkip("eslint is not installed; run ./scripts/setup")
        }
        let page = packageRoot() + "/Sources/PlugIns/TonearmWeb/Page"
        // Debian's eslint finds its modules in /usr/share/nodejs, where Debian's node looks by
        // itself and another build of node (NodeSource's) only when told.
        let result = try runProcess(try which("eslint"), ["--max-warnings", "0", page],
                                    environment: ["NODE_PATH": "/usr/share/nodejs"], timeout: 120)
        XCTAssertEqual(result.status, 0, "\(result.stdout)\n\(result.stderr)")
    }

    private func packageRoot() -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }
}
