/**
 * The in-memory CLI's conversation as a session: how many tokens it takes, and what `/compact` and `/clear` do to
 * it, as the real CLI does them (CLAUDE-CLI.md): a compaction replaces the prompts with one summary that keeps
 * their words (and says `compact_boundary` with the tokens before and after), also on its own near the context
 * window (`auto`); a clear starts a new session under a new id.
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import type { TurnFrame } from "../ClaudeProcess.js"

/** A process's conversation: the session it writes, and its prompts, oldest first. */
export interface Session {
  id: string
  prompts: Array<string>
}

/** What a context of these prompts takes, in tokens: a few per message, and a token per four characters. */
export const tokensOf = (prompts: ReadonlyArray<string>) =>
  prompts.reduce((n, prompt) => n + 25 + Math.ceil(prompt.length / 4), 0)

/** The context share past which the CLI compacts on its own. */
export const AUTO_COMPACT_SHARE = 0.9

/** The window the in-memory model has, unless `Testing` says another. */
export const DEFAULT_CONTEXT_WINDOW = 200_000

/** Compacts the conversation into one summary of its prompts, and says so as the CLI does. */
export const compact = Effect.fnUntraced(
  function*(session: Session, trigger: "manual" | "auto", emit: (frame: TurnFrame) => Effect.Effect<void>) {
    return yield* Effect.suspend(() => {
      const preTokens = tokensOf(session.prompts)
      const summary = session.prompts.length === 0 ? [] : [`Summary: ${session.prompts.join(" | ")}`]
      session.prompts.splice(0, session.prompts.length, ...summary)
      return emit({
        _tag: "Compacted",
        frame: {
          type: "system",
          subtype: "compact_boundary",
          compact_metadata: { trigger, pre_tokens: preTokens, post_tokens: tokensOf(session.prompts) }
        }
      })
    })
  }
)

/** Starts a new session: a new id, and no conversation (the old one stays on the disk, under its own id). */
export const clear = (session: Session, sessions: Map<string, Array<string>>) => {
  session.id = randomUUID()
  session.prompts = []
  sessions.set(session.id, session.prompts)
}
