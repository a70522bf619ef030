/**
 * A handler's `ToolContext` for one SDK request: progress goes out as `notifications/progress` through the
 * request's own notifier (so it travels on the request's stream in either era), only when the client sent a
 * `progressToken`, and only while `progress` increases, as the spec requires.
 */
import type { ServerContext } from "@modelcontextprotocol/server"
import { Effect } from "effect"
import type { ToolContext } from "../Tool.js"

export const toolContext = (ctx: ServerContext): ToolContext => {
  const token = ctx.mcpReq._meta?.progressToken
  let last = -Infinity
  return {
    progress: (message, progress, total) =>
      token === undefined || progress <= last
        ? Effect.void
        : Effect.suspend(() => {
          last = progress
          return Effect.tryPromise(() =>
            ctx.mcpReq.notify({
              method: "notifications/progress",
              params: { progressToken: token, progress, ...(total === undefined ? {} : { total }), message }
            })
          ).pipe(Effect.ignore)
        })
  }
}
