import TonearmAudio

/// The way into a session's stream for a program's audio as it comes (an ALSA program through
/// the `tonearm` plugin): the plug-in that reads the program writes frames straight in, off the
/// daemon's task thread, and learns when there is room again and how much is still to be
/// heard — what a sound card tells a program. `SessionCommand.openInlet` opens one.
///
/// Every member may be called from any thread; none blocks.
public protocol StreamInlet: AnyObject, Sendable {
    /// The stream's rate and channels, and the layout its bytes come in.
    var format: StreamFormat { get }
    var encoding: DeviceSampleFormat { get }
    /// Takes whole frames from the start of `bytes` (interleaved, in `encoding`), as many as
    /// there is room for; returns how many. 0 while the backlog is full, after `end`, or once
    /// the stream is over.
    func write(_ bytes: UnsafeRawBufferPointer) -> Int
    /// Readable when frames have been taken from the backlog (there is room again) or the
    /// stream is over; the waiter calls `consumeWake()` before looking again.
    var wakeDescriptor: Int32 { get }
    func consumeWake()
    /// Frames taken but not yet heard, at the stream's rate.
    var queuedFrames: Int { get }
    /// No more frames: what was taken plays out, then `isFinished`.
    func end()
    /// Everything taken has been heard, or the stream was stopped.
    var isFinished: Bool { get }
}

/// An inlet as a command result carries it: equal when it is the same inlet.
public struct InletReference: Sendable, Equatable {
    public let inlet: any StreamInlet

    public init(_ inlet: any StreamInlet) { self.inlet = inlet }

    public static func == (a: InletReference, b: InletReference) -> Bool { a.inlet === b.inlet }
}
