export * as Routine from "./Routine.js"
export * as Schedule from "./Schedule.js"
export * as Scheduler from "./Scheduler.js"
export * as SchedulerConfig from "./SchedulerConfig.js"
