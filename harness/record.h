/*
 * record.h - `--record` and `--verify`: write what an eval dir proves into its card, and re-check
 * a recorded card against its evidence. Both read the eval dir through evaldir.h (evidence_load(),
 * evidence_check_claims()), which holds the checks.
 */
#ifndef VS_RECORD_H
#define VS_RECORD_H

#include "card.h"
#include "evaldir.h"

/**
 * `--record CARD --eval-dir DIR`: verify, then write validation{status, last_verified, gpu, gen,
 * model, measured{isolated, e2e_pct, parity}, artifact} into the card atomically. `validated` only
 * when the run's verdict is validated, the build was clean and the measured generation is in
 * match.gens; `failed` with the measured numbers when a gate failed. Refused with a clear error when
 * the evidence does not verify, is partial, or comes from a dirty build or a foreign generation.
 */
int record_card(const char *card_path, const char *eval_dir);

/**
 * record_card(), which also lists the card's complete runs on the same device and implementations
 * (evaldir_runs(): their verdicts and speedups, the one recorded marked), warns when another
 * disagrees in verdict or its CI does not overlap, records the range of their speedups in
 * validation.measured.spread, and refuses (VS_EVERIFY) a run older than one of them unless older:
 * then validation.recorded_over names the newest (`--record --older`). record_card() is older 0.
 */
int record_card_run(const char *card_path, const char *eval_dir, int older);

/**
 * `--verify CARD`: re-check a recorded card against its evidence: the evidence verifies and the
 * card's validation values equal what it proves. Draft cards with no artifact pass (nothing is
 * claimed). Returns 0, or VS_EVERIFY with one line per problem.
 */
int record_verify(const char *card_path);

#endif /* VS_RECORD_H */
