/*
 * library.h - a skill library: the cards under a skills directory, in either layout, and the
 * selector GEAK's workflows filter by (index.yaml at the library root).
 *
 * Layouts (docs/DESIGN.md "Skill libraries"): ours, skills/<id>.md, and GEAK's expert_skills,
 * skills/<id>/skill.md with the skill's scripts and docs beside it (those are not cards). A library
 * root is the directory that holds skills/ (and, in GEAK's layout, index.yaml).
 */
#ifndef VS_LIBRARY_H
#define VS_LIBRARY_H

/** The cards of a skills directory: paths "<dir>/<id>.md" or "<dir>/<id>/skill.md", sorted by id. */
struct library_cards {
	char **paths; /* owned */
	int count;
};

/**
 * The cards under skills_dir in both layouts: every "<id>.md" and every "<id>/skill.md" (names
 * starting with '.' skipped; any other file is not a card). Fills *out (release with
 * library_cards_release()). Errors: VS_EIO (the directory cannot be read), VS_ESCHEMA (one id
 * held by both "<id>.md" and "<id>/skill.md"), VS_ENOMEM.
 */
int library_list(struct library_cards *out, const char *skills_dir);

/** Free what l owns; l may be zeroed. */
void library_cards_release(struct library_cards *l);

/**
 * The card that arg names: a card file as given; a skill directory holding skill.md; else an id
 * looked up in skills_dir in both layouts (GEAK's `validate_skill.py SKILL_ID`). *path (malloc'd)
 * set only on success. Errors: VS_ENOTFOUND (nothing by that name; the line says where it looked),
 * VS_ESCHEMA (the id is held by both layouts), VS_ENOMEM.
 */
int library_resolve(char **path, const char *skills_dir, const char *arg);

/**
 * The library root of a card in either layout ("<root>/skills/<id>.md", "<root>/skills/<id>/skill.md"),
 * when that root holds index.yaml (a GEAK library); *root (malloc'd) set then. Returns 1 when found,
 * 0 when not (nothing to keep current), VS_ENOMEM.
 */
int library_index_root(char **root, const char *card_path);

/**
 * Write <root>/index.yaml atomically from the cards under <root>/skills, in GEAK's schema
 * ({id, file, scope, match, expects, validation_status, enforcement?}; `runtime` too when a card
 * states a non-empty one), entries sorted by id, the same bytes for the same library. match and
 * expects are the card's own, key order kept; enforcement as its mode. validation_status is the
 * evidence-backed one: draft and failed as written; validated when the artifact is an eval dir that
 * verifies and proves the block; stale for a validated block that is typed (card.h) or whose
 * evidence does not verify (GEAK's lifecycle demotes those to re-measure). *ncards: the cards
 * indexed. Errors: a card that does not load (its line printed; nothing written), VS_EIO,
 * VS_ENOSPACE, VS_ENOMEM.
 */
int library_reindex(const char *root, int *ncards);

#endif /* VS_LIBRARY_H */
