// The Swift runtime's hooks for the global and main executors (swift_Concurrency, Swift 6.0).
// Swift 6.0 has no other way to replace them; TaskThread sets them before the first task.
// Each holds a Swift function (the Swift calling convention): set from Swift with a thin
// function, as an opaque pointer.
#pragma once

extern void *_Nullable swift_task_enqueueGlobal_hook
    __attribute__((swift_attr("nonisolated(unsafe)")));
extern void *_Nullable swift_task_enqueueGlobalWithDelay_hook
    __attribute__((swift_attr("nonisolated(unsafe)")));
extern void *_Nullable swift_task_enqueueGlobalWithDeadline_hook
    __attribute__((swift_attr("nonisolated(unsafe)")));
extern void *_Nullable swift_task_enqueueMainExecutor_hook
    __attribute__((swift_attr("nonisolated(unsafe)")));
