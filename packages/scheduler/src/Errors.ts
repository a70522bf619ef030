/**
 * The scheduler's typed failures. They are `Schema.TaggedError`s because they leave the process (MCP tool
 * results, CLI output); each message says what happened and what to do.
 */
import { Schema } from "effect"

export class SchedulerNotEnabled extends Schema.TaggedError<SchedulerNotEnabled>()("SchedulerNotEnabled", {}) {
  override get message() {
    return "the scheduler is not enabled: add a `schedule` section to the config"
  }
}

export class RoutineNotFound extends Schema.TaggedError<RoutineNotFound>()("RoutineNotFound", {
  name: Schema.String,
  known: Schema.Array(Schema.String)
}) {
  override get message() {
    const known = this.known.length === 0 ? "no routines are configured" : `routines: ${this.known.join(", ")}`
    return `no routine named "${this.name}" (${known})`
  }
}

export class RoutineBusy extends Schema.TaggedError<RoutineBusy>()("RoutineBusy", {
  name: Schema.String,
  fireId: Schema.String,
  since: Schema.String
}) {
  override get message() {
    return `routine "${this.name}" is still running (fire ${this.fireId}, since ${this.since}): ` +
      "it is not fired again until that fire ends"
  }
}

export class RoutineRailed extends Schema.TaggedError<RoutineRailed>()("RoutineRailed", {
  name: Schema.String,
  spentUsd: Schema.Number,
  dailyBudgetUsd: Schema.Number,
  until: Schema.String
}) {
  override get message() {
    return `routine "${this.name}" spent $${this.spentUsd.toFixed(4)} of its $${this.dailyBudgetUsd} daily budget ` +
      `and is paused until ${this.until}; resume() lifts the rail`
  }
}

/** A trigger outside working hours or while the scheduler is paused, for a routine without `triggerAnyTime`. */
export class RoutineOffHours extends Schema.TaggedError<RoutineOffHours>()("RoutineOffHours", {
  name: Schema.String,
  reason: Schema.String,
  /** When working time starts next, when that is known (not while paused). */
  until: Schema.optionalWith(Schema.String, { exact: true })
}) {
  override get message() {
    const when = this.until === undefined ? "" : ` (working time starts at ${this.until})`
    return `routine "${this.name}" was not triggered: ${this.reason}${when}; ` +
      "set triggerAnyTime: true on the routine to let a trigger fire it at any time"
  }
}

export class RoutineRefused extends Schema.TaggedError<RoutineRefused>()("RoutineRefused", {
  name: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `routine "${this.name}" was not fired: ${this.reason}`
  }
}

/** A steering call with a bad date, window or duration. */
export class InvalidSchedule extends Schema.TaggedError<InvalidSchedule>()("InvalidSchedule", {
  field: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid ${this.field}: ${this.reason}`
  }
}

/** A scan's structured output is not `{ tasks: [{ title, detail, priority? }] }`. */
export class InvalidScanOutput extends Schema.TaggedError<InvalidScanOutput>()("InvalidScanOutput", {
  name: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `scan run "${this.name}" returned output that is not a task list: ${this.reason}`
  }
}
