// swift-tools-version:6.0
import PackageDescription

/// C libraries come from Debian packages; each is wrapped once in a `C<Lib>` target that holds
/// only a modulemap and a shim header.
func systemLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt([apt])])
}

let package = Package(
    name: "Tonearm",
    products: [
        .executable(name: "tonearm", targets: ["tonearm"]),
        .executable(name: "tonearmd", targets: ["tonearmd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.25.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
    ],
    targets: [
        systemLibrary("CALSA", pkgConfig: "alsa", apt: "libasound2-dev"),
        systemLibrary("CFLAC", pkgConfig: "flac", apt: "libflac-dev"),
        systemLibrary("CGPIOD", pkgConfig: "libgpiod", apt: "libgpiod-dev"),
        systemLibrary("CSoxr", pkgConfig: "soxr", apt: "libsoxr-dev"),

        // Threads, wake-ups, real-time priority and memory locks: POSIX wrapped once.
        .target(name: "TonearmSystem", dependencies: [.product(name: "SystemPackage", package: "swift-system")]),
        // Pure audio building blocks: formats, the SPSC ring, sample conversion, the mixer.
        .target(name: "TonearmAudio"),
        // libFLAC: metadata and decoding.
        .target(name: "TonearmFLAC", dependencies: ["CFLAC", "TonearmAudio"]),
        // alsa-lib: one PCM device, negotiated and written to.
        .target(name: "TonearmALSA", dependencies: ["CALSA", "TonearmAudio"]),
        // Decoder thread, output thread and the pipeline between them.
        .target(
            name: "TonearmPlayback",
            dependencies: [
                "CSoxr", "TonearmAudio", "TonearmFLAC", "TonearmALSA", "TonearmSystem",
            ]
        ),
        // Board controls and displays as the daemon sees them: commands, display state, the
        // plug-in protocols, and the pure logic of buttons and encoders. No I/O.
        .target(name: "TonearmBoard"),
        // libgpiod: buttons, encoders and switches on GPIO lines, as board commands.
        .target(name: "TonearmGPIO", dependencies: ["CGPIOD", "TonearmBoard", "TonearmSystem"]),
        // Linux input events (steering-wheel keys, remotes) as board commands.
        .target(name: "TonearmInput", dependencies: ["TonearmBoard", "TonearmSystem"]),
        // Serial displays: termios, and the line, hd44780 and nextion drivers.
        .target(name: "TonearmSerial", dependencies: ["TonearmBoard", "TonearmSystem"]),
        // A small JSON value type (parse and print) for the CLI and the control protocol.
        .target(name: "TonearmJSON"),
        // Audio-session policy: the category table and one pure function over it.
        .target(name: "TonearmSession"),
        // Pure player logic: queue, transport, remote command center, Now Playing. No I/O.
        .target(name: "TonearmPlayer"),
        // The control socket's JSON-lines protocol: requests, replies, the client.
        .target(
            name: "TonearmControl",
            dependencies: ["TonearmJSON", "TonearmSystem", .product(name: "SystemPackage", package: "swift-system")]
        ),
        // The one network edge: every socket the daemon serves, on one SwiftNIO event loop.
        .target(
            name: "TonearmNetwork",
            dependencies: [
                "TonearmControl", "TonearmJSON", "TonearmSystem",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Board profiles: a TOML reader and the daemon's typed configuration.
        .target(name: "TonearmConfig", dependencies: ["TonearmSession", "TonearmBoard"]),
        // Music on disk: directory scans in album order, confinement to the music directory,
        // cover files; and the player state that survives power loss.
        .target(name: "TonearmLibrary", dependencies: ["TonearmFLAC", "TonearmJSON"]),

        .executableTarget(
            name: "tonearm",
            dependencies: [
                "TonearmPlayback", "TonearmFLAC", "TonearmALSA", "TonearmAudio", "TonearmJSON", "TonearmControl", "TonearmSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The daemon's parts held together: player core, engine, state, control socket.
        .target(
            name: "TonearmDaemon",
            dependencies: [
                "TonearmPlayer", "TonearmPlayback", "TonearmALSA", "TonearmAudio", "TonearmControl", "TonearmNetwork", "TonearmLibrary",
                "TonearmJSON", "TonearmConfig", "TonearmSystem", "TonearmSession", "TonearmBoard", "TonearmGPIO",
                "TonearmInput", "TonearmSerial",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "tonearmd",
            dependencies: [
                "TonearmDaemon", "TonearmConfig",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // Counts heap allocations on the calling thread, to prove the render path makes none.
        .target(name: "CAllocationCounter", path: "Tests/CAllocationCounter"),

        .testTarget(name: "TonearmAudioTests", dependencies: ["TonearmAudio", "CAllocationCounter"]),
        .testTarget(name: "TonearmALSATests", dependencies: ["TonearmALSA", "TonearmAudio", "CAllocationCounter"]),
        .testTarget(name: "TonearmPlaybackTests", dependencies: ["TonearmPlayback", "TonearmAudio", "TestSupport"]),
        .testTarget(name: "TonearmFLACTests", dependencies: ["TonearmFLAC", "TestSupport"]),
        .testTarget(name: "TonearmBoardTests", dependencies: ["TonearmBoard"]),
        .testTarget(name: "TonearmGPIOTests", dependencies: ["TonearmGPIO", "TonearmBoard"]),
        .testTarget(name: "TonearmInputTests", dependencies: ["TonearmInput", "TonearmBoard", "TestSupport"]),
        .testTarget(name: "TonearmSerialTests", dependencies: ["TonearmSerial", "TonearmBoard", "TestSupport"]),
        .testTarget(name: "TonearmJSONTests", dependencies: ["TonearmJSON"]),
        .testTarget(name: "TonearmPlayerTests", dependencies: ["TonearmPlayer"]),
        .testTarget(name: "TonearmConfigTests", dependencies: ["TonearmConfig"]),
        .testTarget(name: "TonearmSessionTests", dependencies: ["TonearmSession"]),
        .testTarget(name: "TonearmControlTests", dependencies: ["TonearmControl", "TonearmJSON"]),
        .testTarget(
            name: "TonearmNetworkTests",
            dependencies: [
                "TonearmNetwork", "TonearmControl", "TonearmJSON",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "TonearmLibraryTests", dependencies: ["TonearmLibrary", "TestSupport"]),
        .testTarget(name: "TonearmIntegrationTests", dependencies: ["TestSupport"]),
        .target(name: "TestSupport", dependencies: ["CFLAC"], path: "Tests/TestSupport"),
    ],
    swiftLanguageModes: [.v6]
)
