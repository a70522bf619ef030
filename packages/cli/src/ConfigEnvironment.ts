/**
 * The environment's one mapping onto the config file (`ENVIRONMENT`): each variable wins over the field it
 * names, and a bad value is an error naming the variable.
 */
import { shown } from "@flotta/core/Decode"
import { Config, Effect, Either, Option, Predicate } from "effect"
import { ConfigFileError } from "./ConfigSchema.js"
import { ENVIRONMENT, type Override } from "./Environment.js"
import { readStoreTarget } from "./StoreTarget.js"

export { ENVIRONMENT, type Override } from "./Environment.js"

/** One variable's text as the value of its field (`previous`: the field's value in the file). */
const parse = (override: Override, text: string, previous: unknown): Either.Either<unknown, string> => {
  switch (override.type) {
    case "string":
      return Either.right(text)
    case "integer":
      return /^\s*-?\d+\s*$/.test(text)
        ? Either.right(Number(text))
        : Either.left(`expected an integer, got ${shown(text)}`)
    case "store":
      // The file's retention stays: the variable says where state lives, not how long it is kept.
      return Either.map(readStoreTarget(text, process.cwd(), { requireSuffix: true }), (target) => {
        const retainDays = Predicate.isRecord(previous) ? previous["retainDays"] : undefined
        return target === "memory" || retainDays === undefined ? target : { ...target, retainDays }
      })
  }
}

/**
 * The file with the environment's overrides applied. A section-level override applies only to a section the
 * file has (or one listed in `assume`): a variable never switches a server on by itself.
 */
export const applyEnvironment = Effect.fn("ConfigEnvironment.applyEnvironment")(function*(
  file: string,
  raw: Readonly<Record<string, unknown>>,
  assume: ReadonlyArray<string> = []
) {
  const out: Record<string, unknown> = { ...raw }
  for (const name of assume) {
    if (out[name] === undefined) out[name] = {}
  }
  for (const override of ENVIRONMENT) {
    const value = yield* Config.option(Config.nonEmptyString(override.variable)).pipe(
      Effect.orElseSucceed(() => Option.none<string>())
    )
    if (Option.isNone(value)) continue
    const [first, second] = override.path
    const parsed = parse(override, value.value, out[first])
    if (Either.isLeft(parsed)) {
      return yield* new ConfigFileError({
        file: `the environment (${file})`,
        path: override.variable,
        reason: parsed.left
      })
    }
    const section = out[first]
    if (second === undefined) out[first] = parsed.right
    else if (Predicate.isRecord(section)) out[first] = { ...section, [second]: parsed.right }
  }
  return out
})
