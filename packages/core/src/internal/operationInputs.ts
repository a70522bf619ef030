/**
 * The inputs the operation table's entries share (an agent by its name, a turn, a turn by its id, a run by its
 * name, a start), each with how its method's positional arguments become it and back: `Operations` reads them.
 */
import { Duration, Schema } from "effect"
import { AgentOptions as AgentOptionsData } from "../AgentOptions.js"
import { exact } from "../Decode.js"
import * as Errors from "../Errors.js"
import type { AskOptions } from "../Operation.js"

export const millis = (timeout: Duration.DurationInput | undefined) =>
  timeout === undefined ? {} : { timeoutMs: Duration.toMillis(timeout) }
export const askOptions = (timeoutMs: number | undefined): AskOptions =>
  timeoutMs === undefined ? {} : { timeout: Duration.millis(timeoutMs) }

/** An agent's (or run's) name, as an input names it (a name that breaks the rule is simply not found). */
export const NameField = Schema.propertySignature(Schema.String.pipe(Schema.minLength(1))).annotations({
  description: "The agent's (or run's) name: 1 to 63 characters of a-z, 0-9, '.', '_' or '-', starting with a " +
    "letter or digit"
})
export const Name = Schema.Struct({ name: NameField })
export const byName = { agent: (input: { readonly name: string }) => input.name }
/** An operation on one agent by its name alone. */
export const onName = {
  ...byName,
  route: "agent" as const,
  input: Name,
  encode: (name: string) => ({ name }),
  decode: (input: { readonly name: string }): [name: string] => [input.name]
}
export const TurnInput = Schema.Struct({ name: Schema.String, text: Schema.String, timeoutMs: exact(Schema.Number) })
export const turn = {
  ...byName,
  route: "agent" as const,
  input: TurnInput,
  encode: (name: string, text: string, options: AskOptions = {}) => ({ name, text, ...millis(options.timeout) }),
  decode: (input: typeof TurnInput.Type): [name: string, text: string, options: AskOptions] => [
    input.name,
    input.text,
    askOptions(input.timeoutMs)
  ]
}
export const TurnOf = Schema.Struct({ name: Schema.String, turnId: Schema.String })
export const turnOf = {
  ...byName,
  route: "agent" as const,
  input: TurnOf,
  encode: (name: string, turnId: string) => ({ name, turnId }),
  decode: (input: typeof TurnOf.Type): [name: string, turnId: string] => [input.name, input.turnId]
}
export const RunName = {
  route: "run" as const,
  input: Name,
  encode: (name: string) => ({ name }),
  decode: (input: { readonly name: string }): [name: string] => [input.name]
}
export const TurnErrors = Errors.TurnErrorSchema.members
export const SpawnInput = Schema.Struct({ name: Schema.String, options: AgentOptionsData })
export const ForkInput = Schema.Struct({
  source: Schema.String,
  name: Schema.String,
  at: exact(Schema.String),
  options: AgentOptionsData
})
