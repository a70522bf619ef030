/**
 * Copying the set fields of an options object: with exact optional properties a field that is `undefined` must be
 * left out, not copied as `undefined`.
 */

/** The fields of `source` named by `keys` whose value is not `undefined`. */
export const definedFields = <S extends object, K extends keyof S>(
  source: S,
  keys: ReadonlyArray<K>
): { [P in K]?: Exclude<S[P], undefined> } => {
  const out: { [P in K]?: Exclude<S[P], undefined> } = {}
  for (const key of keys) {
    const value = source[key]
    if (value !== undefined) out[key] = value as Exclude<S[K], undefined>
  }
  return out
}
