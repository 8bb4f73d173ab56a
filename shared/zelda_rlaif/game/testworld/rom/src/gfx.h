/* Tile graphics: every 16x16 block occupies 4 consecutive tiles, stored in 8x16-sprite order. */
#ifndef TESTWORLD_GFX_H
#define TESTWORLD_GFX_H

#include <stdint.h>

/* 16x16 blocks. Block n owns tiles 4n..4n+3 ordered top-left, bottom-left, top-right,
 * bottom-right: that is the layout an 8x16 object pair needs, and background metatiles use
 * the same blocks, so one art format serves both. */
enum {
    BLK_BLANK,
    BLK_GRASS,
    BLK_TREE,
    BLK_ROCK,
    BLK_WATER,
    BLK_ROOF,
    BLK_HOUSE_WALL,
    BLK_DOOR,
    BLK_STAIRS,
    BLK_FLOOR,
    BLK_WALL,
    BLK_MAT,
    BLK_LOCKED,
    BLK_BARS,
    BLK_SWITCH_OFF,
    BLK_SWITCH_ON,
    BLK_RUPEE,
    BLK_BIG_RUPEE,
    BLK_KEY,
    BLK_SWORD_ITEM,
    BLK_NPC,
    BLK_HERO_DOWN,
    BLK_HERO_UP,
    BLK_HERO_RIGHT,
    BLK_SWORD_UP,
    BLK_SWORD_RIGHT,
    BLK_ENEMY_A,
    BLK_ENEMY_B,
    NUM_BLOCKS
};

/* Single 8x8 tiles after the blocks. */
#define TILE_BLANK      0
#define TILE_HEART0     (NUM_BLOCKS * 4)
#define TILE_RUPEE_ICON (TILE_HEART0 + 5)
#define TILE_KEY_ICON   (TILE_HEART0 + 6)
#define TILE_SWORD_ICON (TILE_HEART0 + 7)
#define TILE_BORDER     (TILE_HEART0 + 8)
#define NUM_SMALL_TILES 9

/* ASCII 32..95, so text can be written as plain upper-case C strings. */
#define TILE_FONT 128
#define FONT_FIRST 32
#define FONT_COUNT 64
#define FONT_TILE(c) ((uint8_t)(TILE_FONT + (uint8_t)(c) - FONT_FIRST))

void gfx_load(void);

#endif
