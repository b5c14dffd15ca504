import CFLAC
import Foundation

/// Writes FLAC files with libFLAC's own encoder, for fixtures the `flac` tool cannot make
/// (any bit depth from 4 to 32, odd rates, 8 channels, big blocks). Samples come from
/// `FLACFixture.samples()` or any other interleaved source.
public enum LibFLACEncoder {
    public struct Picture {
        public var type: Int
        public var mimeType: String
        public var width: Int
        public var height: Int
        public var data: [UInt8]

        public init(type: Int, mimeType: String, width: Int, height: Int, data: [UInt8]) {
            self.type = type
            self.mimeType = mimeType
            self.width = width
            self.height = height
            self.data = data
        }
    }

    public struct EncodeError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Encodes interleaved `samples` (plain values within `bits` bits) to `path`.
    /// `knownLength: false` streams the output so STREAMINFO keeps a total of 0 (unknown).
    public static func write(
        _ samples: [Int32], to path: String, sampleRate: Int, channels: Int, bits: Int,
        blockSize: Int? = nil, seekTable: Bool = false, knownLength: Bool = true,
        tags: [(String, String)] = [], pictures: [Picture] = []
    ) throws {
        guard let encoder = FLAC__stream_encoder_new() else { throw EncodeError(description: "no encoder") }
        defer { FLAC__stream_encoder_delete(encoder) }
        let frames = samples.count / channels
        FLAC__stream_encoder_set_channels(encoder, UInt32(channels))
        FLAC__stream_encoder_set_bits_per_sample(encoder, UInt32(bits))
        FLAC__stream_encoder_set_sample_rate(encoder, UInt32(sampleRate))
        FLAC__stream_encoder_set_compression_level(encoder, 5)
        FLAC__stream_encoder_set_streamable_subset(encoder, 0)  // allow 4- and 32-bit, odd rates, big blocks
        if let blockSize { FLAC__stream_encoder_set_blocksize(encoder, UInt32(blockSize)) }
        if knownLength { FLAC__stream_encoder_set_total_samples_estimate(encoder, FLAC__uint64(frames)) }

        var blocks: [UnsafeMutablePointer<FLAC__StreamMetadata>?] = []
        defer { for b in blocks { FLAC__metadata_object_delete(b) } }
        if !tags.isEmpty {
            let vc = FLAC__metadata_object_new(FLAC__METADATA_TYPE_VORBIS_COMMENT)
            for (name, value) in tags {
                var entry = FLAC__StreamMetadata_VorbisComment_Entry()
                guard FLAC__metadata_object_vorbiscomment_entry_from_name_value_pair(&entry, name, value) != 0,
                      FLAC__metadata_object_vorbiscomment_append_comment(vc, entry, 0) != 0 else {
                    throw EncodeError(description: "bad tag \(name)")
                }
            }
            blocks.append(vc)
        }
        for picture in pictures {
            let p = FLAC__metadata_object_new(FLAC__METADATA_TYPE_PICTURE)!
            p.pointee.data.picture.type = FLAC__StreamMetadata_Picture_Type(UInt32(picture.type))
            p.pointee.data.picture.width = UInt32(picture.width)
            p.pointee.data.picture.height = UInt32(picture.height)
            p.pointee.data.picture.depth = 24
            var mime = Array(picture.mimeType.utf8CString)
            var data = picture.data
            _ = mime.withUnsafeMutableBufferPointer { FLAC__metadata_object_picture_set_mime_type(p, $0.baseAddress, 1) }
            _ = data.withUnsafeMutableBufferPointer { FLAC__metadata_object_picture_set_data(p, $0.baseAddress, UInt32($0.count), 1) }
            blocks.append(p)
        }
        if seekTable {
            let st = FLAC__metadata_object_new(FLAC__METADATA_TYPE_SEEKTABLE)
            FLAC__metadata_object_seektable_template_append_spaced_points_by_samples(st, UInt32(sampleRate), FLAC__uint64(frames))
            FLAC__metadata_object_seektable_template_sort(st, 1)
            blocks.append(st)
        }
        if !blocks.isEmpty {
            _ = blocks.withUnsafeMutableBufferPointer { FLAC__stream_encoder_set_metadata(encoder, $0.baseAddress, UInt32($0.count)) }
        }

        let status: FLAC__StreamEncoderInitStatus
        var sink: FileHandle?
        if knownLength {
            status = FLAC__stream_encoder_init_file(encoder, path, nil, nil)
        } else {
            // No seek callback: libFLAC cannot go back to fill in STREAMINFO's total.
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            sink = FileHandle(forWritingAtPath: path)
            let context = Unmanaged.passUnretained(sink!).toOpaque()
            status = FLAC__stream_encoder_init_stream(encoder, { _, buffer, bytes, _, _, context in
                let handle = Unmanaged<FileHandle>.fromOpaque(context!).takeUnretainedValue()
                handle.write(Data(bytes: buffer!, count: bytes))
                return FLAC__STREAM_ENCODER_WRITE_STATUS_OK
            }, nil, nil, nil, context)
        }
        guard status == FLAC__STREAM_ENCODER_INIT_STATUS_OK else {
            throw EncodeError(description: "encoder init failed: \(status.rawValue)")
        }
        let ok = samples.withUnsafeBufferPointer {
            FLAC__stream_encoder_process_interleaved(encoder, $0.baseAddress, UInt32(frames))
        }
        let finished = FLAC__stream_encoder_finish(encoder)
        try sink?.close()
        guard ok != 0, finished != 0 else { throw EncodeError(description: "encoding \(path) failed") }
    }
}
