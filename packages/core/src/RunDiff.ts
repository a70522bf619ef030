/**
 * What a run in a worktree changed, against the commit it started from, as Schemas: each file with its lines
 * added and removed (`DiffFile`), the patch up to a bound with its full size (`Changes`), and the run's diff as it
 * is recorded when the run ends (`RunDiff`); `NoDiff`, the failure of a run that had no worktree; where the store
 * keeps a run's diff by name; and the pure helpers both git seams share (numstat read, a patch cut to its bound).
 */
import { Schema } from "effect"

/** The most of a patch a diff keeps (256 KiB); its full size is recorded beside it. */
export const MAX_PATCH_BYTES = 256 * 1024

/** One file a run changed (added, modified or deleted): lines added and removed, null for a binary file. */
export const DiffFile = Schema.Struct({
  path: Schema.String,
  added: Schema.NullOr(Schema.Number),
  removed: Schema.NullOr(Schema.Number)
})
export type DiffFile = typeof DiffFile.Type

/** What a worktree holds against a commit: committed, uncommitted and new untracked files alike. */
export const Changes = Schema.Struct({
  files: Schema.Array(DiffFile),
  /** Lines added and removed over every file (binary files count none). */
  added: Schema.Number,
  removed: Schema.Number,
  /** The unified patch, cut at a line boundary when it is longer than the bound. */
  patch: Schema.String,
  /** The whole patch's size in bytes, cut or not. */
  patchBytes: Schema.Number,
  truncated: Schema.Boolean
})
export type Changes = typeof Changes.Type

/** A run's changes, as recorded when it ended (or, while it goes on, as they stand). */
export const RunDiff = Schema.Struct({
  name: Schema.String,
  /** Where the worktree was (it may be gone: gc, or `cleanup`) and its branch. */
  worktree: Schema.String,
  branch: Schema.String,
  /** The commit the run started from. */
  base: Schema.String,
  ...Changes.fields,
  /** True while the run still goes on: the changes so far, not yet recorded. */
  running: Schema.Boolean,
  /** When it was recorded (or read, while the run goes on), ISO. */
  at: Schema.String
})
export type RunDiff = typeof RunDiff.Type

export class NoDiff extends Schema.TaggedError<NoDiff>()("NoDiff", { name: Schema.String }) {
  override get message() {
    return `run "${this.name}" had no worktree, so it has no diff (start it with worktree: true to record one)`
  }
}

/** Where the store keeps a run's diff (its key/value state), so it outlives the worktree and the run. */
/** Where a run's recorded diff is kept in the store's key/value state (retention prunes these by their `at`). */
export const STATE_PREFIX = "run-diff/"
export const stateKey = (name: string) => `${STATE_PREFIX}${name}`

/** `git diff --numstat -z` read into files (`-` counts, a binary file's, are null). */
export const parseNumstat = (text: string): ReadonlyArray<DiffFile> =>
  text.split("\0").flatMap((record) => {
    const match = /^(-|\d+)\t(-|\d+)\t(.+)$/s.exec(record.replace(/^\n/, ""))
    if (match === null) return []
    const count = (s: string) => (s === "-" ? null : Number(s))
    return [{ path: match[3]!, added: count(match[1]!), removed: count(match[2]!) }]
  })

/** The patch kept within `max` bytes: cut after its last whole line that fits, when it does not fit whole. */
export const boundPatch = (bytes: Uint8Array, totalBytes: number, max: number = MAX_PATCH_BYTES) => {
  if (totalBytes <= max && bytes.length === totalBytes) {
    return { patch: new TextDecoder().decode(bytes), patchBytes: totalBytes, truncated: false }
  }
  const head = bytes.subarray(0, Math.min(bytes.length, max))
  const lastNewline = head.lastIndexOf(10)
  const kept = lastNewline < 0 ? head.subarray(0, 0) : head.subarray(0, lastNewline + 1)
  return { patch: new TextDecoder().decode(kept), patchBytes: totalBytes, truncated: true }
}

/** Files and a patch as `Changes`, the totals summed. */
export const changesOf = (
  files: ReadonlyArray<DiffFile>,
  patch: { readonly patch: string; readonly patchBytes: number; readonly truncated: boolean }
): Changes => ({
  files,
  added: files.reduce((n, f) => n + (f.added ?? 0), 0),
  removed: files.reduce((n, f) => n + (f.removed ?? 0), 0),
  ...patch
})

/** Files by name for a person to read: the first few, then how many more (`a.ts, b.ts and 3 more`). */
export const someFiles = (files: ReadonlyArray<string>, shown = 5): string =>
  files.length <= shown
    ? files.join(", ")
    : `${files.slice(0, shown).join(", ")} and ${files.length - shown} more`
