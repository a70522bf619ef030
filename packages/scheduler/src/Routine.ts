/**
 * Routines: the schedule's declarative unit, validated like agent specs. Validation never throws: a bad
 * routine is reported with the path of its bad field and skipped, so one typo never stops the others.
 *
 * Safety by construction: a routine gets write authority only from a named `run` template (checked for a
 * worktree when it fires) or from an inline write permission that comes with `worktree: true`. Scans are
 * always read-only.
 *
 * A routine without `every` (or with `{ "triggered": true }`) never falls due: it fires when triggered from
 * outside (`POST /hooks/routines/NAME`, `POST /hooks/github`) or by hand. Its `secret` is kept `Redacted`.
 */
import { Labels } from "@flotta/core/AgentOptions"
import { NAME_PATTERN } from "@flotta/core/AgentView"
import { decodeAt } from "@flotta/core/Decode"
import * as Permission from "@flotta/core/Permission"
import type { Fleet, Rejected } from "@flotta/core/Spec"
import { referenceProblem, ShapeAnnotationId } from "@flotta/core/Spec"
import { Either, Predicate, Schema } from "effect"
import type { Cadence, RoutineAction } from "./Steering.js"
import { parseClock } from "./WorkingHours.js"

const Name = (what: string) =>
  Schema.String.pipe(Schema.pattern(NAME_PATTERN, {
    message: () => `${what}: 1 to 63 characters: a-z, 0-9, '.', '_' or '-', starting with a letter or digit`
  }))
const PositiveInt = Schema.Number.pipe(Schema.int(), Schema.positive())
const Dollars = Schema.Number.pipe(Schema.positive({ message: () => "a positive number of dollars" }))
const Text = Schema.String.pipe(Schema.minLength(1, { message: () => "a non-empty string" }))
const Env = Schema.Record({ key: Schema.String, value: Schema.String })
/** An optional field that, when present, must be valid (no `undefined`), described for the config reference. */
const optional = <A, I>(schema: Schema.Schema<A, I>, description: string) =>
  Schema.optionalWith(schema, { exact: true }).annotations({ description })
/** A required field, described for the config reference. */
const required = <A, I>(schema: Schema.Schema<A, I>, description: string) =>
  Schema.propertySignature(schema).annotations({ description })

/** What `every` accepts (`decodeEvery` checks it, with messages of its own). */
export const CadenceSchema = Schema.Union(
  Schema.Struct({ intervalMs: PositiveInt.pipe(Schema.greaterThanOrEqualTo(1000)) }),
  Schema.Struct({ dailyAt: Schema.String.pipe(Schema.pattern(/^\d{2}:\d{2}$/)) }),
  Schema.Struct({ triggered: Schema.Literal(true) })
)

const SECRET_MESSAGE = "a string of at least 16 characters"
/** A per-routine secret: checked as written, then kept `Redacted` (so no view, entry or log shows it). */
const Secret = Schema.Redacted(
  Schema.String.annotations({ message: () => SECRET_MESSAGE }).pipe(
    Schema.minLength(16, { message: () => SECRET_MESSAGE })
  )
)

const Common = {
  name: required(Name("a routine name"), "The routine's name, unique among the routines."),
  action: Schema.Literal("scan", "run", "dispatch_scan", "prompt"),
  /** Decoded on its own first (see `decodeEvery`); kept here so excess-property checks know it. */
  every: Schema.optionalWith(Schema.Unknown, { exact: true }).annotations({
    description: "When it fires: `{ \"intervalMs\": n }` after every n ms of working time; " +
      "`{ \"dailyAt\": \"HH:MM\" }` once per working day, at that local time. Absent (or " +
      "`{ \"triggered\": true }`): never on a schedule, only when triggered (`POST /hooks/routines/NAME`, " +
      "`POST /hooks/github`) or by hand.",
    [ShapeAnnotationId]: CadenceSchema
  }),
  secret: optional(
    Secret,
    "A secret of this routine's own (16 characters or more): a caller of `POST /hooks/routines/NAME` may " +
      "present it instead of the server's token. Never shown in status, reports or saved state."
  ),
  triggerAnyTime: optional(
    Schema.Boolean,
    "A trigger fires it outside working hours and while the scheduler is paused too (default: a trigger " +
      "then is refused and recorded as a skip)."
  ),
  maxBudgetUsd: optional(Dollars, "Dollars at most per fire."),
  labels: optional(
    Labels,
    "Labels for the runs it starts (`{ \"team\": \"a\" }`), beside `routine: NAME`, which it always sets: " +
      "`costs --by label:routine` groups spend by routine, `--by label:team` by team."
  ),
  dailyBudgetUsd: optional(
    Dollars,
    "Dollars per day for this routine: crossing it pauses the routine until the next day."
  )
}

/** Where and how a scan's (or a run's) child runs. */
const Placement = {
  cwd: optional(Text, "The child's working directory."),
  model: optional(Text, "The model name or alias."),
  env: optional(Env, "Added to the child's environment."),
  maxTurns: optional(PositiveInt, "Model calls at most."),
  timeoutMs: optional(PositiveInt, "The child's turn is interrupted after this long, in milliseconds.")
}

const ScanFields = {
  ...Placement,
  focus: optional(Text, "Narrows what the scan looks for."),
  prompt: optional(Text, "The scan's turn text; the scan's rules and focus go into its system prompt.")
}

const ScanRoutine = Schema.Struct({
  ...Common,
  action: required(
    Schema.Literal("scan"),
    "A read-only run that returns tasks as structured output; they join the findings."
  ),
  ...ScanFields
})
const DispatchRoutine = Schema.Struct({
  ...Common,
  action: required(Schema.Literal("dispatch_scan"), "A scan, then a run of `template` per new task."),
  ...ScanFields,
  template: required(Name("a run template name"), "The `run` template each new task is dispatched to."),
  maxDispatch: Schema.optionalWith(PositiveInt.pipe(Schema.lessThanOrEqualTo(100)), { default: () => 1 })
    .annotations({ description: "Runs at most per fire." })
})
const RunRoutine = Schema.Struct({
  ...Common,
  action: required(Schema.Literal("run"), "A run: a template, or a prompt with its own settings."),
  ...Placement,
  template: optional(
    Name("a run template name"),
    "A `run` entry of the fleet: the run takes its permission and worktree from it."
  ),
  prompt: optional(Text, "The task (required without a template)."),
  permission: optional(
    Permission.PermissionData,
    "Only without a template; a write permission needs `worktree: true`."
  ),
  worktree: optional(Schema.Boolean, "Only without a template: the run works in its own git worktree.")
})
const PromptRoutine = Schema.Struct({
  ...Common,
  action: required(Schema.Literal("prompt"), "A turn to a standing session (`maxBudgetUsd` is refused)."),
  agent: required(Name("an agent name"), "The session to prompt."),
  prompt: required(Text, "The turn's text."),
  timeoutMs: optional(PositiveInt, "The turn's timeout, in milliseconds.")
})

/** A routine as written in the config's `routines` (one of four actions). */
export const RoutineSchema = Schema.Union(ScanRoutine, DispatchRoutine, RunRoutine, PromptRoutine)

type WithCadence<A> = Omit<A, "every"> & { readonly every: Cadence }
export type ScanRoutine = WithCadence<typeof ScanRoutine.Type>
export type DispatchRoutine = WithCadence<typeof DispatchRoutine.Type>
export type RunRoutine = WithCadence<typeof RunRoutine.Type>
export type PromptRoutine = WithCadence<typeof PromptRoutine.Type>
export type Routine = ScanRoutine | DispatchRoutine | RunRoutine | PromptRoutine

/** The scan settings a `scan` or `dispatch_scan` routine (or `scanNow`) uses. */
export type ScanParams = Pick<ScanRoutine, "focus" | "prompt" | "cwd" | "model" | "env" | "maxTurns" | "timeoutMs">

const ACTIONS: ReadonlyArray<RoutineAction> = ["scan", "run", "dispatch_scan", "prompt"]

type Issues = ReadonlyArray<{ readonly path: string; readonly message: string }>

const decodeAction = (
  action: RoutineAction,
  input: unknown,
  entry: string
): Either.Either<Record<string, unknown>, Issues> => {
  switch (action) {
    case "scan":
      return decodeAt(ScanRoutine, input, entry)
    case "dispatch_scan":
      return decodeAt(DispatchRoutine, input, entry)
    case "run":
      return decodeAt(RunRoutine, input, entry)
    case "prompt":
      return decodeAt(PromptRoutine, input, entry)
  }
}

const EVERY_HINT = "expected { \"intervalMs\": <ms of working time> }, { \"dailyAt\": \"HH:MM\" } or " +
  "{ \"triggered\": true } (or no every)"

const decodeEvery = (every: unknown, at: string): Either.Either<Cadence, { path: string; message: string }> => {
  // No cadence: the routine fires only when triggered (or by hand).
  if (every === undefined) return Either.right({ triggered: true })
  if (!Predicate.isRecord(every)) return Either.left({ path: at, message: EVERY_HINT })
  const keys = Object.keys(every)
  if (keys.length !== 1) return Either.left({ path: at, message: `${EVERY_HINT}: give exactly one of them` })
  if ("intervalMs" in every) {
    const ms = every["intervalMs"]
    return typeof ms === "number" && Number.isInteger(ms) && ms >= 1000
      ? Either.right({ intervalMs: ms })
      : Either.left({ path: `${at}.intervalMs`, message: "a whole number of milliseconds, at least 1000" })
  }
  if ("dailyAt" in every) {
    const time = every["dailyAt"]
    return typeof time === "string" && parseClock(time) !== undefined
      ? Either.right({ dailyAt: time })
      : Either.left({ path: `${at}.dailyAt`, message: "a local time of day, \"HH:MM\" (00:00 to 23:59)" })
  }
  if ("triggered" in every) {
    return every["triggered"] === true
      ? Either.right({ triggered: true })
      : Either.left({ path: `${at}.triggered`, message: "true (or leave every out): fired only when triggered" })
  }
  return Either.left({ path: `${at}.${keys[0]}`, message: `unknown cadence: ${EVERY_HINT}` })
}

/** Checks one routine; `entry` is where it sits in the config (e.g. `routines[2]`). */
export const validate = (input: unknown, entry = "routine"): Either.Either<Routine, ReadonlyArray<Rejected>> => {
  const name = Predicate.isRecord(input) && typeof input["name"] === "string" ? input["name"] : null
  const reject = (issues: ReadonlyArray<{ readonly path: string; readonly message: string }>) =>
    Either.left(issues.map((issue) => ({ entry, name, ...issue })))
  if (!Predicate.isRecord(input)) return reject([{ path: entry, message: "expected an object describing a routine" }])
  const action = input["action"]
  if (typeof action !== "string" || !ACTIONS.includes(action as RoutineAction)) {
    return reject([{ path: `${entry}.action`, message: `expected one of ${ACTIONS.map((a) => `"${a}"`).join(", ")}` }])
  }
  const every = decodeEvery(input["every"], `${entry}.every`)
  const decoded = decodeAction(action as RoutineAction, input, entry)
  const issues = [
    ...(Either.isLeft(every) ? [every.left] : []),
    ...(Either.isLeft(decoded) ? decoded.left : [])
  ]
  if (Either.isLeft(every) || Either.isLeft(decoded)) return reject(issues)
  const routine = { ...decoded.right, every: every.right } as Routine
  const refusal = refuse(routine)
  return refusal === undefined ? Either.right(routine) : reject([{ path: `${entry}.${refusal.field}`, ...refusal }])
}

/** The safety rules a schema cannot say. */
const refuse = (routine: Routine): { readonly field: string; readonly message: string } | undefined => {
  switch (routine.action) {
    case "run": {
      if (routine.template !== undefined) {
        if (routine.permission !== undefined) {
          return {
            field: "permission",
            message: "a run routine with a template takes its permission from the template"
          }
        }
        if (routine.worktree !== undefined) {
          return { field: "worktree", message: "a run routine with a template takes its worktree from the template" }
        }
        return undefined
      }
      if (routine.prompt === undefined) {
        return { field: "prompt", message: "a run routine needs a prompt (or a template)" }
      }
      if (routine.permission !== undefined && Permission.canWrite(routine.permission) && routine.worktree !== true) {
        return {
          field: "permission",
          message: "an inline write permission without a worktree is refused: name a run template with a " +
            "worktree (template: \"...\"), or set worktree: true"
        }
      }
      return undefined
    }
    case "prompt":
      return routine.maxBudgetUsd === undefined ? undefined : {
        field: "maxBudgetUsd",
        message: "a turn of a standing session cannot be bounded per fire: use dailyBudgetUsd for a prompt routine"
      }
    default:
      return undefined
  }
}

export interface Routines {
  readonly routines: ReadonlyArray<Routine>
  readonly rejected: ReadonlyArray<Rejected>
}

/** The name of the fleet's entry a routine needs, and the kind it must be, if it needs one. */
const needs = (
  routine: Routine
): { readonly field: string; readonly name: string; readonly as: "run" | "session" } | undefined => {
  switch (routine.action) {
    case "run":
      return routine.template === undefined ? undefined : { field: "template", name: routine.template, as: "run" }
    case "dispatch_scan":
      return { field: "template", name: routine.template, as: "run" }
    case "prompt":
      return { field: "agent", name: routine.agent, as: "session" }
    case "scan":
      return undefined
  }
}

/**
 * Reads the `routines` array: valid routines in order, and every rejected one with its reasons. Given the declared
 * fleet, a routine naming a run template or a session it does not declare is rejected too.
 */
export const readRoutines = (input: unknown, entry = "routines", fleet?: Fleet): Routines => {
  if (input === undefined) return { routines: [], rejected: [] }
  if (!Array.isArray(input)) {
    return { routines: [], rejected: [{ entry, name: null, path: entry, message: "expected an array of routines" }] }
  }
  const routines: Array<Routine> = []
  const rejected: Array<Rejected> = []
  const seen = new Map<string, string>()
  input.forEach((item, index) => {
    const at = `${entry}[${index}]`
    const result = validate(item, at)
    if (Either.isLeft(result)) {
      rejected.push(...result.left)
      return
    }
    const routine = result.right
    const reject = (field: string, message: string): void => {
      rejected.push({ entry: at, name: routine.name, path: `${at}.${field}`, message })
    }
    const first = seen.get(routine.name)
    if (first !== undefined) return reject("name", `duplicate name "${routine.name}" (${first} has it already)`)
    const needed = needs(routine)
    if (fleet !== undefined && needed !== undefined) {
      const problem = referenceProblem(fleet, needed.name, needed.as)
      if (problem !== undefined) return reject(needed.field, problem)
    }
    seen.set(routine.name, at)
    routines.push(routine)
  })
  return { routines, rejected }
}
