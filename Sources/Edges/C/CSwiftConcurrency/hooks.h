// Swift 6.0's way to keep every task on one thread (TaskThread): the Swift runtime's hooks for
// the global executor (swift_Concurrency), and libdispatch's main queue, drained by the thread
// itself as a run loop does. Swift 6.3 has an executor factory instead.
//
// Each hook holds a Swift function (the Swift calling convention): set from Swift with a thin
// function, as an opaque pointer. The runtime sends the main actor's jobs to libdispatch's main
// queue, past any hook.
#pragma once

extern void *_Nullable swift_task_enqueueGlobal_hook
    __attribute__((swift_attr("nonisolated(unsafe)")));
extern void *_Nullable swift_task_enqueueGlobalWithDelay_hook
    __attribute__((swift_attr("nonisolated(unsafe)")));
extern void *_Nullable swift_task_enqueueGlobalWithDeadline_hook
    __attribute__((swift_attr("nonisolated(unsafe)")));

// The main queue's descriptor (an eventfd), readable while jobs wait on the queue.
extern int _dispatch_get_main_queue_handle_4CF(void);
// Runs the jobs waiting on the main queue; on the main thread only.
extern void _dispatch_main_queue_callback_4CF(void *_Nullable message);
