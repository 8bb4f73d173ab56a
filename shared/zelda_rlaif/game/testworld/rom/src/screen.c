/* VRAM and OAM work (see screen.h). */
#include <stdint.h>

#include "gfx.h"
#include "hw.h"
#include "screen.h"
#include "world.h"
#include "wram.h"

#define OAM_ENTRIES 40
#define NO_REQUEST  0xFF
/* At most 3 cells change at once (switch + bars), ~250 cycles each; more would overrun VBlank,
 * so a larger batch falls back to a full redraw. */
#define MAX_CELL_UPDATES 3
#define SCREEN_COLS 20
#define HUD_COLS    12 /* hearts in row 0, rupees/keys/sword in row 1 fit in columns 0-11 */

/* Page-aligned for OAM DMA; crt0's DMA routine hard-codes page $CE. */
static __at(0xCE00) uint8_t shadow_oam[OAM_ENTRIES * 4];

/* The DMA routine crt0 copied into HRAM. */
#define oam_dma() (((void (*)(void))0xFF80)())

#define TEXT_BOX_ROWS 5
#define TEXT_BOX_WY   (144 - TEXT_BOX_ROWS * 8)
#define MENU_ROWS     16
#define MENU_WY       (HUD_ROWS * 8)

static const char npc_line1[] = "OLD MAN: WELCOME!";
static const char npc_line2[] = "THE KEY NORTH OPENS";
static const char npc_line3[] = "THE EAST GATE.";

static uint8_t room_pending;
static uint8_t hud_pending;
/* The HUD's tiles (BG rows 0-1, columns 0..HUD_COLS-1), prepared during the game step so that
 * VBlank only has to copy them. */
static uint8_t hud_tiles[2 * HUD_COLS];
static uint8_t window_pending;
static uint8_t window_mode;
static uint8_t cell_count;
static uint8_t cell_cols[MAX_CELL_UPDATES];
static uint8_t cell_rows[MAX_CELL_UPDATES];
static uint8_t *oam_next;
static uint8_t *oam_end_last;
static uint8_t oam_dirty;

static uint8_t lcdc_value(void)
{
    uint8_t v = LCDC_ON | LCDC_WIN_MAP_9C00 | LCDC_TILES_8000 | LCDC_OBJ_8X16 | LCDC_BG_ON;
    /* Sprites would draw on top of the full-screen menu. */
    if (window_mode != WINDOW_MENU)
        v |= LCDC_OBJ_ON;
    if (window_mode != WINDOW_NONE)
        v |= LCDC_WIN_ON;
    return v;
}

static void draw_cell(uint8_t col, uint8_t row)
{
    volatile uint8_t *p = BG_MAP + ((uint16_t)(row * 2 + HUD_ROWS) << 5) + (uint8_t)(col << 1);
    uint8_t t = (uint8_t)(cell_block(world_cell(col, row)) << 2);
    p[0] = t;
    p[1] = (uint8_t)(t + 2);
    p[MAP_STRIDE] = (uint8_t)(t + 1);
    p[MAP_STRIDE + 1] = (uint8_t)(t + 3);
}

/* Runs with the LCD off; kept lean because every extra frame it takes is a frame without a
 * game step. Plain (non-volatile) pointers are fine for VRAM here: every store is kept, and
 * SDCC generates much tighter code for them. */
static void draw_room(void)
{
    const char *map = world_map();
    uint8_t *top = (uint8_t *)BG_MAP + HUD_ROWS * MAP_STRIDE;
    uint8_t *bottom;
    uint8_t col, row, t;

    for (row = 0; row < ROOM_ROWS; row++) {
        bottom = top + MAP_STRIDE;
        for (col = 0; col < ROOM_COLS; col++) {
            t = (uint8_t)(cell_block((uint8_t)*map++) << 2);
            *top++ = t;
            *top++ = (uint8_t)(t + 2);
            *bottom++ = (uint8_t)(t + 1);
            *bottom++ = (uint8_t)(t + 3);
        }
        top += 2 * MAP_STRIDE - 2 * ROOM_COLS;
    }
}

static uint8_t digit_tile(uint8_t d)
{
    return FONT_TILE('0' + d);
}

static void put_text(volatile uint8_t *p, const char *s)
{
    while (*s)
        *p++ = FONT_TILE(*s++);
}

static void put_bcd_digits(volatile uint8_t *p, uint8_t hi, uint8_t lo, uint8_t digits)
{
    if (digits == 4)
        *p++ = digit_tile(hi >> 4);
    if (digits >= 3)
        *p++ = digit_tile(hi & 0x0F);
    *p++ = digit_tile(lo >> 4);
    *p = digit_tile(lo & 0x0F);
}

static void put_decimal3(volatile uint8_t *p, uint8_t v)
{
    p[0] = digit_tile(v / 100);
    p[1] = digit_tile((v / 10) % 10);
    p[2] = digit_tile(v % 10);
}

static void build_hud(void)
{
    uint8_t *p = hud_tiles;
    uint8_t i, quarters, health = wHealth, hearts = wMaxHealth >> 2;

    /* Row 0: up to 8 hearts from column 1. Row 1: rupees, keys, sword. */
    for (i = 0; i < 8; i++) {
        if (i >= hearts) {
            p[1 + i] = TILE_BLANK;
            continue;
        }
        quarters = health > 4 ? 4 : health;
        health -= quarters;
        p[1 + i] = (uint8_t)(TILE_HEART0 + quarters);
    }
    p += HUD_COLS;
    p[1] = TILE_RUPEE_ICON;
    put_bcd_digits(p + 2, wRupees[1], wRupees[0], 3);
    p[7] = TILE_KEY_ICON;
    p[8] = digit_tile(wKeys > 9 ? 9 : wKeys);
    p[11] = wSwordLevel ? TILE_SWORD_ICON : TILE_BLANK;
}

static void copy_hud(void)
{
    const uint8_t *src = hud_tiles;
    uint8_t *dst = (uint8_t *)BG_MAP;
    uint8_t i;
    for (i = 0; i < HUD_COLS; i++)
        *dst++ = *src++;
    dst += MAP_STRIDE - HUD_COLS;
    for (i = 0; i < HUD_COLS; i++)
        *dst++ = *src++;
}

static void clear_window_rows(uint8_t rows)
{
    volatile uint8_t *p = WIN_MAP;
    uint8_t r, c;
    for (c = 0; c < SCREEN_COLS; c++)
        p[c] = TILE_BORDER;
    for (r = 1; r < rows; r++) {
        p += MAP_STRIDE;
        for (c = 0; c < SCREEN_COLS; c++)
            p[c] = TILE_BLANK;
    }
}

#define WIN_AT(col, row) (WIN_MAP + (row) * MAP_STRIDE + (col))

static void draw_window(void)
{
    if (window_mode == WINDOW_TEXT) {
        clear_window_rows(TEXT_BOX_ROWS);
        put_text(WIN_AT(1, 1), npc_line1);
        put_text(WIN_AT(1, 2), npc_line2);
        put_text(WIN_AT(1, 3), npc_line3);
        rWY = TEXT_BOX_WY;
        return;
    }
    clear_window_rows(MENU_ROWS);
    put_text(WIN_AT(7, 2), "PAUSED");
    put_text(WIN_AT(2, 4), "RUPEES");
    put_bcd_digits(WIN_AT(14, 4), wRupees[1], wRupees[0], 3);
    put_text(WIN_AT(2, 5), "KEYS");
    *WIN_AT(16, 5) = digit_tile(wKeys > 9 ? 9 : wKeys);
    put_text(WIN_AT(2, 6), "SWORD");
    put_text(WIN_AT(14, 6), wSwordLevel ? "YES" : " NO");
    put_text(WIN_AT(2, 7), "DEATHS");
    put_bcd_digits(WIN_AT(13, 7), wDeathCounter[1], wDeathCounter[0], 4);
    put_text(WIN_AT(2, 8), "DEFEATED");
    put_decimal3(WIN_AT(14, 8), wEnemiesDefeated);
    put_text(WIN_AT(2, 13), "START: RESUME");
    rWY = MENU_WY;
}

void screen_init(void)
{
    volatile uint8_t *p;
    uint16_t i;

    /* Switching the LCD off outside VBlank can damage a real DMG. */
    while (rLY < LY_VBLANK) {
    }
    rLCDC = 0;

    rBGP = 0xE4;
    rOBP0 = 0xE4;
    rOBP1 = 0xE4;
    rSCX = 0;
    rSCY = 0;
    rWX = 7;
    rWY = 0;
    gfx_load();
    p = BG_MAP;
    for (i = 0; i < 2 * 32 * 32; i++)
        *p++ = TILE_BLANK;
    p = (volatile uint8_t *)0xFE00;
    for (i = 0; i < OAM_ENTRIES * 4; i++)
        *p++ = 0;
    window_pending = NO_REQUEST;
}

/* First picture: drawn directly while the LCD is still off from screen_init(). */
void screen_start(void)
{
    draw_room();
    build_hud();
    copy_hud();
    room_pending = 0;
    hud_pending = 0;
    cell_count = 0;
    rLCDC = lcdc_value();
}

void screen_vblank(void)
{
    uint8_t i;

    /* Frozen frames (menu, text box) leave the sprites alone: skip the copy. */
    if (oam_dirty) {
        oam_dma();
        oam_dirty = 0;
    }
    if (room_pending || window_pending == WINDOW_TEXT || window_pending == WINDOW_MENU) {
        /* Called right after the VBlank interrupt, so the LCD may be switched off now. */
        rLCDC = 0;
        if (room_pending)
            draw_room();
        if (window_pending != NO_REQUEST) {
            window_mode = window_pending;
            draw_window();
        }
        copy_hud();
        room_pending = 0;
        hud_pending = 0;
        cell_count = 0;
        window_pending = NO_REQUEST;
        rLCDC = lcdc_value();
        return;
    }
    if (window_pending == WINDOW_NONE) {
        window_mode = WINDOW_NONE;
        window_pending = NO_REQUEST;
        rLCDC = lcdc_value();
    }
    /* VBlank is ~1100 machine cycles: cells and the HUD never share one (the HUD waits). */
    if (cell_count) {
        for (i = 0; i < cell_count; i++)
            draw_cell(cell_cols[i], cell_rows[i]);
        cell_count = 0;
    } else if (hud_pending) {
        copy_hud();
        hud_pending = 0;
    }
}

void screen_request_room(void)
{
    room_pending = 1;
    cell_count = 0;
}

void screen_request_cell(uint8_t col, uint8_t row)
{
    if (room_pending)
        return;
    if (cell_count == MAX_CELL_UPDATES) {
        room_pending = 1;
        return;
    }
    cell_cols[cell_count] = col;
    cell_rows[cell_count] = row;
    cell_count++;
}

void screen_request_hud(void)
{
    build_hud();
    hud_pending = 1;
}

void screen_show_window(uint8_t mode)
{
    window_pending = mode;
}

void sprites_begin(void)
{
    oam_next = shadow_oam;
}

/* A 16x16 object centred on playfield pixel (cx, cy), as two 8x16 sprites. */
void sprite16(uint8_t cx, uint8_t cy, uint8_t block, uint8_t flags)
{
    uint8_t *e = oam_next;
    uint8_t t = (uint8_t)(block << 2);
    /* OAM coordinates are offset by (8, 16); the playfield starts HUD_ROWS tiles down. */
    uint8_t y = (uint8_t)(cy + 16 + HUD_ROWS * 8 - 8);
    uint8_t left = t, right = (uint8_t)(t + 2);

    if (flags & OAM_FLAG_XFLIP) {
        left = right;
        right = t;
    }
    *e++ = y;
    *e++ = cx;
    *e++ = left;
    *e++ = flags;
    *e++ = y;
    *e++ = (uint8_t)(cx + 8);
    *e++ = right;
    *e++ = flags;
    oam_next = e;
}

void sprites_end(void)
{
    uint8_t *e;
    /* Hide the entries used last frame but not this one (y = 0 is off-screen). */
    for (e = oam_next; e < oam_end_last; e += 4)
        *e = 0;
    oam_end_last = oam_next;
    oam_dirty = 1;
}
