/* The test world's rooms: layout data and the rules of what each cell is. */
#ifndef TESTWORLD_WORLD_H
#define TESTWORLD_WORLD_H

#include <stdint.h>

#include "wram.h"

/* Like Oracle, a room is 10x8 metatiles of 16x16 pixels. */
#define ROOM_COLS 10
#define ROOM_ROWS 8
#define CELL_SIZE 16

#define NO_ROOM 0xFF

/* Cell characters of the room maps in world.c. */
#define CELL_GRASS      '.'
#define CELL_FLOOR      ','
#define CELL_TREE       'T'
#define CELL_ROCK       'r'
#define CELL_WATER      '~'
#define CELL_WALL       '#'
#define CELL_ROOF       'H'
#define CELL_HOUSE_WALL 'h'
#define CELL_DOOR       'D'
#define CELL_STAIRS     '>'
#define CELL_EXIT_MAT   'X'
#define CELL_LOCKED     'L'
#define CELL_BARS       'P'
#define CELL_SWITCH     'S'
#define CELL_RUPEE      '$'
#define CELL_BIG_RUPEE  'G'
#define CELL_KEY        'K'
#define CELL_SWORD      'W'
#define CELL_NPC        'N'
#define CELL_ENEMY      'E'

/* room_solid[] values. */
#define PASSABLE     0
#define SOLID        1
#define SOLID_LOCKED 2 /* the locked door: solid, but opens when touched with a key */

/* What a cell character is (cell_info[]); 0 for plain ground. */
#define CI_SOLID  0x01
#define CI_ITEM   0x02
#define CI_WARP   0x04
#define CI_ENEMY  0x08
#define CI_LOCKED 0x10
#define CI_BARS   0x20
#define CI_SWITCH 0x40

#define NO_CELL 0xFF

typedef struct {
    const char *map;    /* ROOM_ROWS rows of ROOM_COLS cells, top row first */
    uint8_t warp_group; /* where this room's door, stairs or exit mat leads */
    uint8_t warp_room;
    uint8_t warp_x;
    uint8_t warp_y;
} Room;

extern const uint8_t cell_info[128];
extern const uint8_t room_row_offset[ROOM_ROWS];

/* Collision of the current room, one byte per cell, rebuilt on entry and whenever a door opens:
 * the hot paths (player and enemy movement, every frame) then cost one table read per corner. */
extern uint8_t room_solid[ROOM_COLS * ROOM_ROWS];
#define SOLID_AT(px, py) (room_solid[room_row_offset[(uint8_t)(py) >> 4] + ((uint8_t)(px) >> 4)])

/* Found by world_set_room(): the room's item still to take (NO_CELL if none) and enemy spawns. */
extern uint8_t room_item_col, room_item_row;
extern uint8_t room_enemy_count;
extern uint8_t room_enemy_col[MAX_ENEMIES], room_enemy_row[MAX_ENEMIES];

void world_set_room(uint8_t group, uint8_t room);
void world_refresh_solid(void);
const Room *world_room(void);
const char *world_map(void);
uint8_t world_cell(uint8_t col, uint8_t row);
uint8_t world_cell_at(uint8_t px, uint8_t py);
uint8_t world_neighbor(uint8_t dir);
volatile uint8_t *world_room_flags(void);
uint8_t cell_block(uint8_t cell);

#endif
