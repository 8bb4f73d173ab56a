/*
 * Everything that touches VRAM and OAM. Game logic only records what must change; the
 * changes are applied by screen_vblank() right after the VBlank interrupt, when VRAM is free.
 * Big changes (a new room, opening the text box or menu) switch the LCD off for that frame
 * instead of trickling writes over several VBlanks.
 */
#ifndef TESTWORLD_SCREEN_H
#define TESTWORLD_SCREEN_H

#include <stdint.h>

/* The HUD takes the top two tile rows; the 160x128 playfield is below it. */
#define HUD_ROWS 2

enum { WINDOW_NONE, WINDOW_TEXT, WINDOW_MENU };

void screen_init(void);
void screen_start(void);
void screen_vblank(void);

void screen_request_room(void);
void screen_request_cell(uint8_t col, uint8_t row);
void screen_request_hud(void);
void screen_show_window(uint8_t mode);

/* Sprites are collected into the shadow OAM each frame and copied at the next VBlank. */
void sprites_begin(void);
void sprite16(uint8_t cx, uint8_t cy, uint8_t block, uint8_t flags);
void sprites_end(void);

#endif
