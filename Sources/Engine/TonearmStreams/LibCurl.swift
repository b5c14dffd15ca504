import CCurl
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// libcurl, loaded with `dlopen` when the first stream plays rather than linked: libcurl and
/// the libraries it pulls in (libcrypto, libssl, nghttp2, ldap, gssapi…) cost the daemon about
/// 5 MB of resident memory from its start, and most boxes play files most of the time.
///
/// Loaded once and kept until the process ends, never unloaded when the last stream stops:
/// libcrypto pins itself in memory (it cannot be unloaded, so a dlclose would give back little),
/// `curl_global_cleanup` is not thread-safe against a stream starting on another thread, and a
/// box that played a station once will likely play one again. Only a failed load is tried
/// again, at the next stream: installing libcurl4 needs no restart.
///
/// Holds exactly the functions `HTTPSource` calls, as typed C function pointers. CCurl gives
/// their types and constants (curl's headers) and links nothing.
struct LibCurl: @unchecked Sendable {  // C function addresses, never changed after the load
    /// libcurl4's shared object (Debian's libcurl4, built against OpenSSL).
    static let soname = "libcurl.so.4"

    typealias Handle = UnsafeMutableRawPointer
    typealias WriteCallback = @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int

    let easyInit: @convention(c) () -> Handle?
    let easyCleanup: @convention(c) (Handle?) -> Void
    let easyPause: @convention(c) (Handle?, Int32) -> CURLcode
    let easyStrerror: @convention(c) (CURLcode) -> UnsafePointer<CChar>
    let slistAppend: @convention(c) (UnsafeMutablePointer<curl_slist>?, UnsafePointer<CChar>?) -> UnsafeMutablePointer<curl_slist>?
    let slistFreeAll: @convention(c) (UnsafeMutablePointer<curl_slist>?) -> Void
    let multiInit: @convention(c) () -> Handle?
    let multiCleanup: @convention(c) (Handle?) -> CURLMcode
    let multiAddHandle: @convention(c) (Handle?, Handle?) -> CURLMcode
    let multiRemoveHandle: @convention(c) (Handle?, Handle?) -> CURLMcode
    let multiPerform: @convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> CURLMcode
    let multiPoll: @convention(c) (Handle?, UnsafeMutablePointer<curl_waitfd>?, UInt32, Int32, UnsafeMutablePointer<Int32>?) -> CURLMcode
    let multiWakeup: @convention(c) (Handle?) -> CURLMcode
    let multiInfoRead: @convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> UnsafeMutablePointer<CURLMsg>?

    // curl_easy_setopt(CURL *, CURLoption, ...) and curl_easy_getinfo(CURL *, CURLINFO, ...) are
    // variadic, which Swift cannot call: each is looked up once and seen through one
    // non-variadic type per kind of argument (long, pointer, callback; a curl_off_t option
    // would be one more). Sound on Linux only: the x86-64 System V and AAPCS64 conventions pass
    // a variadic integer or pointer argument exactly as a fixed one, in the next general
    // register (on x86-64 the callee reads %al only to decide whether to spill vector
    // registers, which these calls do not use), whereas Apple's arm64 puts every variadic
    // argument on the stack. Tonearm targets Linux.
    let setoptLong: @convention(c) (Handle?, CURLoption, Int) -> CURLcode
    let setoptPointer: @convention(c) (Handle?, CURLoption, UnsafeRawPointer?) -> CURLcode
    let setoptWrite: @convention(c) (Handle?, CURLoption, WriteCallback?) -> CURLcode
    let getinfoLong: @convention(c) (Handle?, CURLINFO, UnsafeMutablePointer<Int>?) -> CURLcode

    /// Why libcurl could not be loaded: dlopen's, dlsym's or curl_global_init's error.
    struct LoadError: Error {
        let why: String
    }

    /// The libraries loaded so far, by name: each was loaded and initialised once.
    private static let loaded = Mutex<[String: LibCurl]>([:])

    /// The library `name` (libcurl's own by default), loaded and `curl_global_init`ed by the
    /// first caller, on its thread (curl_global_init is thread-safe since 7.84; Debian bookworm
    /// has 7.88).
    static func load(_ name: String = soname) throws(LoadError) -> LibCurl {
        try loaded.withLock { (libraries) throws(LoadError) -> LibCurl in
            if let library = libraries[name] { return library }
            let library = try open(name)
            libraries[name] = library
            return library
        }
    }

    private static func open(_ name: String) throws(LoadError) -> LibCurl {
        _ = dlerror()
        guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else { throw LoadError(why: lastError()) }
        var missing: String?
        func symbol<F>(_ symbol: String, as type: F.Type) -> F {
            guard let address = dlsym(handle, symbol) else {
                if missing == nil { missing = lastError() }
                return unsafeBitCast(Self.unavailable, to: type)
            }
            return unsafeBitCast(address, to: type)
        }
        let setopt = "curl_easy_setopt"
        let getinfo = "curl_easy_getinfo"
        let library = LibCurl(
            easyInit: symbol("curl_easy_init", as: (@convention(c) () -> Handle?).self),
            easyCleanup: symbol("curl_easy_cleanup", as: (@convention(c) (Handle?) -> Void).self),
            easyPause: symbol("curl_easy_pause", as: (@convention(c) (Handle?, Int32) -> CURLcode).self),
            easyStrerror: symbol("curl_easy_strerror", as: (@convention(c) (CURLcode) -> UnsafePointer<CChar>).self),
            slistAppend: symbol("curl_slist_append", as: (@convention(c) (UnsafeMutablePointer<curl_slist>?, UnsafePointer<CChar>?) -> UnsafeMutablePointer<curl_slist>?).self),
            slistFreeAll: symbol("curl_slist_free_all", as: (@convention(c) (UnsafeMutablePointer<curl_slist>?) -> Void).self),
            multiInit: symbol("curl_multi_init", as: (@convention(c) () -> Handle?).self),
            multiCleanup: symbol("curl_multi_cleanup", as: (@convention(c) (Handle?) -> CURLMcode).self),
            multiAddHandle: symbol("curl_multi_add_handle", as: (@convention(c) (Handle?, Handle?) -> CURLMcode).self),
            multiRemoveHandle: symbol("curl_multi_remove_handle", as: (@convention(c) (Handle?, Handle?) -> CURLMcode).self),
            multiPerform: symbol("curl_multi_perform", as: (@convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> CURLMcode).self),
            multiPoll: symbol("curl_multi_poll", as: (@convention(c) (Handle?, UnsafeMutablePointer<curl_waitfd>?, UInt32, Int32, UnsafeMutablePointer<Int32>?) -> CURLMcode).self),
            multiWakeup: symbol("curl_multi_wakeup", as: (@convention(c) (Handle?) -> CURLMcode).self),
            multiInfoRead: symbol("curl_multi_info_read", as: (@convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> UnsafeMutablePointer<CURLMsg>?).self),
            setoptLong: symbol(setopt, as: (@convention(c) (Handle?, CURLoption, Int) -> CURLcode).self),
            setoptPointer: symbol(setopt, as: (@convention(c) (Handle?, CURLoption, UnsafeRawPointer?) -> CURLcode).self),
            setoptWrite: symbol(setopt, as: (@convention(c) (Handle?, CURLoption, WriteCallback?) -> CURLcode).self),
            getinfoLong: symbol(getinfo, as: (@convention(c) (Handle?, CURLINFO, UnsafeMutablePointer<Int>?) -> CURLcode).self)
        )
        let globalInit = symbol("curl_global_init", as: (@convention(c) (Int) -> CURLcode).self)
        if let missing {
            // An older libcurl (before 7.68, no curl_multi_wakeup): unusable, let go.
            dlclose(handle)
            throw LoadError(why: missing)
        }
        let code = globalInit(Int(CURL_GLOBAL_DEFAULT))
        guard code == CURLE_OK else {
            throw LoadError(why: "curl_global_init: \(String(cString: library.easyStrerror(code)))")
        }
        return library
    }

    /// Stands in for a symbol that is missing until the load is given up; never called.
    private static let unavailable: @convention(c) () -> Void = { fatalError("libcurl function called after a failed load") }

    private static func lastError() -> String {
        dlerror().map { String(cString: $0) } ?? "unknown dlopen error"
    }
}
