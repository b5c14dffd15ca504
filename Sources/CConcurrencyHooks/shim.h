#pragma once
// The Swift runtime's hooks for where tasks are enqueued (swift/Runtime/Concurrency.h), used
// by TaskThread with compilers before Swift 6.3, which have no public executor factory. Each
// holds a Swift-convention function pointer, or NULL for the runtime's own pool.
extern void *swift_task_enqueueGlobal_hook;
extern void *swift_task_enqueueGlobalWithDelay_hook;
extern void *swift_task_enqueueGlobalWithDeadline_hook;

/// Sets the three hooks, once, before the first task.
static inline void tonearm_set_enqueue_hooks(void *now, void *after, void *at) {
    swift_task_enqueueGlobal_hook = now;
    swift_task_enqueueGlobalWithDelay_hook = after;
    swift_task_enqueueGlobalWithDeadline_hook = at;
}
