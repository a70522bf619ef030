/**
 * The simulator's wire encoding: how a decision of the rule engine (`SimulatorRules.ts`) becomes what the
 * Messages API sends: the error JSON, the message JSON of a `stream: false` answer, and the SSE event stream of a
 * `stream: true` answer (the only kind the `claude` CLI asks for).
 */
import { Array as Arr, Duration, Effect, Option, Stream } from "effect"
import type { Block, Decision, Json, Usage } from "./SimulatorRules.js"

// How often a SLOW answer sends a piece of its text.
const SLOW_TICK_MS = 100

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  429: "rate_limit_error",
  529: "overloaded_error"
}

/** The API's error JSON; the type follows the status unless given. */
export const errorJson = (status: number, message: string, type = ERROR_TYPES[status] ?? "api_error") => ({
  type: "error",
  error: { type, message }
})

/** The API's message JSON (the whole answer of a `stream: false` request, or `message_start`'s message). */
export const messageJson = (
  id: string,
  model: string,
  content: ReadonlyArray<Block>,
  stopReason: string | null,
  usage: Usage
) => ({
  id,
  type: "message",
  role: "assistant",
  model,
  content,
  stop_reason: stopReason,
  stop_sequence: null,
  usage: { ...usage, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
})

const sse = (type: string, data: Json): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

const encoder = new TextEncoder()

/**
 * The SSE body of a streamed answer: `message_start`, per block `content_block_start`, one
 * `content_block_delta` (`text_delta` or `input_json_delta`) and `content_block_stop`, then `message_delta`
 * (stop reason, output tokens) and `message_stop`. Each element is what is sent at one moment, encoded: an
 * immediate answer is one element. A SLOW text is spread over `slowMs`, one delta per tick; HANG stops after
 * `message_start`. The waits are `Effect.sleep`s, so interrupting the stream (the client went away, or the
 * server closed) ends them.
 */
export const sseEvents = (
  id: string,
  model: string,
  decision: Exclude<Decision, { readonly _tag: "error" }>,
  usage: Usage
): Stream.Stream<Uint8Array> => {
  const send = (events: ReadonlyArray<string>) => encoder.encode(events.join(""))
  const answerUsage = decision._tag === "message" ? decision.usage : usage
  const start = sse("message_start", {
    message: messageJson(id, model, [], null, { ...answerUsage, output_tokens: 1 })
  })
  if (decision._tag === "hang") return Stream.concat(Stream.succeed(send([start])), Stream.never)

  const finish = [
    sse("message_delta", {
      delta: { stop_reason: decision.stopReason, stop_sequence: null },
      usage: { output_tokens: answerUsage.output_tokens }
    }),
    sse("message_stop", {})
  ]
  const blockStart = (index: number, block: Block) =>
    sse("content_block_start", {
      index,
      content_block: block.type === "text" ? { type: "text", text: "" } : { ...block, input: {} }
    })
  const textDelta = (index: number, text: string) =>
    sse("content_block_delta", { index, delta: { type: "text_delta", text } })
  const blockStop = (index: number) => sse("content_block_stop", { index })

  const [only] = decision.content
  if (decision.slowMs !== undefined && decision.content.length === 1 && only?.type === "text") {
    const full = only.text
    const ticks = Math.max(1, Math.round(decision.slowMs / SLOW_TICK_MS))
    const pause = Duration.millis(decision.slowMs / ticks)
    const tick = (i: number): ReadonlyArray<string> => {
      const piece = full.slice(Math.floor((i * full.length) / ticks), Math.floor(((i + 1) * full.length) / ticks))
      return [
        ...(piece === "" ? [] : [textDelta(0, piece)]),
        ...(i === ticks - 1 ? [blockStop(0), ...finish] : [])
      ]
    }
    return Stream.concat(
      Stream.succeed(send([start, blockStart(0, only)])),
      Stream.fromIterable(Arr.makeBy(ticks, tick)).pipe(
        Stream.mapEffect((events) => Effect.as(Effect.sleep(pause), events)),
        Stream.filterMap((events) => events.length === 0 ? Option.none() : Option.some(send(events)))
      )
    )
  }

  return Stream.succeed(send([
    start,
    ...decision.content.flatMap((block, index) => [
      blockStart(index, block),
      block.type === "text"
        ? textDelta(index, block.text)
        : sse("content_block_delta", {
          index,
          delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) }
        }),
      blockStop(index)
    ]),
    ...finish
  ]))
}
