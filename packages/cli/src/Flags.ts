/**
 * Options and arguments whose bad values fail with one kind of message, naming the flag (or argument) and the
 * value given: `--permission: "bogus" is not one of read_only, full` (exit code 2, before anything runs).
 *
 * @effect/cli's own checks (choice, integer, float, path) say only what they expected, never which flag was
 * wrong, so every value here is taken as text and checked with a Schema; `withPseudoName` keeps `--help`
 * showing what a flag takes (`--permission read_only | full`).
 */
import { Args, HelpDoc, Options, ValidationError } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { NAME_PATTERN } from "@flotta/core/AgentView"
import { Duration, Effect, Either, Option, ParseResult, Schema } from "effect"

/** A value as a message shows it: quoted as JSON (so an empty or odd value is visible), long ones cut short. */
export const quote = (value: string): string => JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value)

/** `<field>: "<value>" <reason>`, the one shape of every bad command-line value. */
export const describe = (field: string, value: string, reason: string): string => `${field}: ${quote(value)} ${reason}`

/** Checks a value with a schema; the reason is `reason` when given, else the schema's own first message. */
const checker = <A>(field: string, schema: Schema.Schema<A, string>, reason?: string) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (value: string): Either.Either<A, string> =>
    Either.mapLeft(
      decode(value),
      (error) =>
        describe(
          field,
          value,
          reason ?? ParseResult.ArrayFormatter.formatErrorSync(error)[0]?.message ?? "is not valid"
        )
    )
}

const failOption = (message: string) => ValidationError.invalidValue(HelpDoc.p(message))

/** An option that may be left out, with its `--help` line: `flag.pipe(Flags.optional("What it does."))`. */
export const optional = (description: string) => <A>(self: Options.Options<A>): Options.Options<Option.Option<A>> =>
  Options.optional(Options.withDescription(self, description))

/** A `--name` option taken as text and checked with `schema`; `reason` says what is wrong with a bad value. */
export const checked = <A>(
  name: string,
  schema: Schema.Schema<A, string>,
  { pseudoName, reason }: { readonly pseudoName: string; readonly reason?: string }
): Options.Options<A> => {
  const check = checker(`--${name}`, schema, reason)
  return Options.text(name).pipe(
    Options.withPseudoName(pseudoName),
    Options.mapEffect((value) => Effect.mapError(check(value), failOption))
  )
}

/** A repeatable `--name` option (`--name a --name b`), each value checked with `schema` as `checked` does. */
export const repeatedChecked = <A>(
  name: string,
  schema: Schema.Schema<A, string>,
  { description, pseudoName, reason }: {
    readonly pseudoName: string
    readonly reason?: string
    readonly description: string
  }
): Options.Options<Array<A>> => {
  const check = checker(`--${name}`, schema, reason)
  return Options.text(name).pipe(
    Options.withPseudoName(pseudoName),
    Options.withDescription(description),
    Options.repeated,
    Options.mapEffect((values) => Effect.mapError(Either.all(values.map(check)), failOption))
  )
}

const LabelEntry = Schema.String.pipe(Schema.pattern(/^[^=]+=/))

/** A repeatable `--label KEY=VALUE` (`--label team=a --label tier=gold`), as `labelsOf` reads it. */
export const labels = (description: string): Options.Options<Array<string>> =>
  repeatedChecked("label", LabelEntry, {
    pseudoName: "KEY=VALUE",
    reason: "is not KEY=VALUE (a label's key, then =, then its value)",
    description
  })

/** `KEY=VALUE` entries (`--env`, `--label`) as a record: the key up to the first `=`, the value after it. */
export const pairs = (entries: ReadonlyArray<string>): Record<string, string> =>
  Object.fromEntries(entries.map((entry) => {
    const at = entry.indexOf("=")
    return [entry.slice(0, at), entry.slice(at + 1)]
  }))

/** The `--label` entries as labels: `{}` spelt as absent (no `labels` argument). */
export const labelsOf = (entries: ReadonlyArray<string>): { readonly labels?: Record<string, string> } =>
  entries.length === 0 ? {} : { labels: pairs(entries) }

/** One of a fixed set of words, as a command line gives it (text). */
export const oneOf = <const C extends ReadonlyArray<string>>(choices: C): Schema.Schema<C[number], string> =>
  Schema.String.pipe(Schema.filter((word): word is C[number] => choices.includes(word)))

/** One of a fixed set of words. */
export const choice = <const C extends ReadonlyArray<string>>(name: string, choices: C): Options.Options<C[number]> =>
  checked(name, oneOf(choices), {
    pseudoName: choices.join(" | "),
    reason: `is not one of ${choices.join(", ")}`
  })

const PositiveInt = Schema.NumberFromString.pipe(Schema.int(), Schema.positive())
const NonNegativeInt = Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())
const PositiveNumber = Schema.NumberFromString.pipe(Schema.finite(), Schema.positive())

/** A whole number above 0. */
export const positiveInteger = (name: string) =>
  checked(name, PositiveInt, { pseudoName: "integer", reason: "is not a whole number above 0" })

/** A whole number, 0 or more. */
export const nonNegativeInteger = (name: string) =>
  checked(name, NonNegativeInt, { pseudoName: "integer", reason: "is not a whole number (0 or more)" })

/** A number above 0 (fractions allowed). */
export const positiveNumber = (name: string) =>
  checked(name, PositiveNumber, { pseudoName: "number", reason: "is not a number above 0" })

/** `90` (seconds), `90s`, `500ms`, `5m`, `1h`. */
export const parseDuration = (text: string): Option.Option<Duration.Duration> => {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text)
  if (match === null) return Option.none()
  const value = Number(match[1])
  const unit = match[2] ?? "s"
  const millis = unit === "ms" ? value : unit === "s" ? value * 1000 : unit === "m" ? value * 60_000 : value * 3_600_000
  return millis > 0 ? Option.some(Duration.millis(millis)) : Option.none()
}

const DurationFromText = Schema.String.pipe(
  Schema.filter((text) => Option.isSome(parseDuration(text))),
  Schema.transform(Schema.DurationFromSelf, {
    strict: true,
    decode: (text) => Option.getOrThrow(parseDuration(text)),
    encode: (duration) => `${Duration.toMillis(duration)}ms`
  })
)

/** A duration above 0: `90` (seconds), `90s`, `500ms`, `5m`, `1h`. */
export const duration = (name: string) =>
  checked(name, DurationFromText, {
    pseudoName: "duration",
    reason: "is not a duration above 0 such as 90, 90s, 500ms, 5m or 1h"
  })

/** What a name of an agent or run may be (the engine's own rule). */
export const NAME_RULE = "1 to 63 characters: a-z, 0-9, '.', '_' or '-', starting with a letter or digit"
const Name = Schema.String.pipe(Schema.pattern(NAME_PATTERN))

/** An agent's or a run's name. */
export const agentName = (name: string) =>
  checked(name, Name, { pseudoName: "name", reason: `is not a valid name (${NAME_RULE})` })

/** Any text but the empty string. */
export const nonEmpty = (name: string, pseudoName = "text") =>
  checked(name, Schema.String.pipe(Schema.filter((s) => s.trim().length > 0)), { pseudoName, reason: "is empty" })

const HttpUrl = Schema.String.pipe(Schema.filter((text) => {
  if (!URL.canParse(text)) return false
  const protocol = new URL(text).protocol
  return protocol === "http:" || protocol === "https:"
}))

/** An http(s) URL. */
export const url = (name: string) =>
  checked(name, HttpUrl, { pseudoName: "url", reason: "is not an http(s) URL such as http://127.0.0.1:4099/mcp" })

/** A path that must exist, as a directory or as a file. */
const existing = (name: string, type: "Directory" | "File") =>
  Options.text(name).pipe(
    Options.withPseudoName(type === "Directory" ? "directory" : "file"),
    Options.mapEffect((value) =>
      Effect.flatMap(FileSystem.FileSystem, (fs) => fs.stat(value)).pipe(
        Effect.map((info) => info.type === type),
        Effect.orElseSucceed(() => false),
        Effect.filterOrFail(
          (ok) => ok,
          () => failOption(describe(`--${name}`, value, type === "Directory" ? "is not a directory" : "is not a file"))
        ),
        Effect.as(value)
      )
    )
  )

/** A directory that exists. */
export const directory = (name: string) => existing(name, "Directory")

/** A file that exists. */
export const file = (name: string) => existing(name, "File")

// ------------------------------------------------------------------------------------------------ arguments

/** A lone word starting with `-`: a mistyped or unknown option, or an option missing its value. */
const FLAG_LIKE = /^--?[A-Za-z][\w-]*(=.*)?$/

const Text = Schema.String.pipe(
  Schema.filter((text) =>
    text.trim().length === 0
      ? "is empty"
      : FLAG_LIKE.test(text)
      ? "is an option, not text: no such option here, or it lacks its value (see --help)"
      : true
  )
)

/** An argument checked with a schema; its description is what `--help` says under it. */
export const argument = <A>(
  name: string,
  description: string,
  schema: Schema.Schema<A, string>,
  reason?: string
): Args.Args<A> => {
  const check = checker(`<${name}>`, schema, reason)
  return Args.text({ name }).pipe(
    Args.withDescription(description),
    Args.mapEffect((value) => Effect.mapError(check(value), (message) => HelpDoc.p(message)))
  )
}

/** Free text (a prompt): not empty, and not a lone `--flag` that was meant as an option. */
export const textArgument = (name: string, description: string) => argument(name, description, Text)

/** An agent's name. */
export const nameArgument = (name: string, description: string) =>
  argument(name, description, Name, `is not a valid name (${NAME_RULE})`)
