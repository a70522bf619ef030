/** Options several commands share, and the config loading they all do the same way. */
import { Options } from "@effect/cli"
import { Effect, Option, Record as Rec, Schema } from "effect"
import * as ConfigFile from "./ConfigFile.js"
import * as Flags from "./Flags.js"

export const simulate = Options.boolean("simulate").pipe(
  Options.withDescription("Use the built-in scripted model on 127.0.0.1 instead of the API (no account, no cost).")
)

/** `--json` for a command that answers without a serve (the client commands have their own, in Connection). */
export const json = Options.boolean("json").pipe(
  Options.withDescription("Print the structured answer as JSON instead of the view for a person.")
)

export const config = Flags.file("config").pipe(
  Flags.optional("The config file (default: flotta.config.json, .flotta/config.json or flotta.config.ts).")
)

/**
 * A bad command-line value found by a command's handler (one that needs more than the value to judge it):
 * names the flag (or argument) and what is wrong, as `Flags` does for the values it checks (exit code 2).
 */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  field: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.field}: ${this.reason}`
  }
}

export const invalid = (field: string, reason: string) => new UsageError({ field, reason })

/** `--flag: "value" <reason>`. */
export const badValue = (field: string, value: string, reason: string) =>
  new UsageError({ field, reason: `${Flags.quote(value)} ${reason}` })

/** Loads the config; the entries it skips are reported by whatever boots them (serve, repl) and by `doctor`. */
export const loadConfig = Effect.fn("SharedOptions.loadConfig")(function*(explicit: Option.Option<string>) {
  return yield* ConfigFile.load(process.cwd(), Option.getOrUndefined(explicit))
})

/** `{ key: value }` when the option is set, else `{}`: spread into a tool's arguments or a run's options. */
export const ifSome = <K extends string, A>(key: K, value: Option.Option<A>): Partial<Record<K, A>> =>
  Option.match(value, { onNone: () => ({}), onSome: (v) => Rec.singleton(key, v) })
