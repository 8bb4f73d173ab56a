/*
 * The world: a 4x4 overworld (group 0, room id (row << 4) | col) and three indoor rooms
 * (group 1): a house with an NPC, a switch-puzzle room and the treasure room behind its bars.
 *
 * Doorways are always two cells wide (32 px) and sit at the same place on every edge
 * (rows 3-4 on the left and right, columns 4-5 on the top and bottom), so a doorway in one
 * room always lines up with its neighbour's. Each room holds at most one item ($, G, K, W),
 * because a room has a single ITEM flag, and at most MAX_ENEMIES enemy spawns (E).
 */
#include <stdint.h>

#include "gfx.h"
#include "wram.h"
#include "world.h"

#define NONE NO_ROOM, 0, 0, 0

static const Room overworld[16] = {
    /* $00: north-west grove, a rupee */
    {"TTTTTTTTTT"
     "T........T"
     "T.TT..$..T"
     "T.TT......"
     "T........."
     "T......TTT"
     "T........T"
     "TTTT..TTTT", NONE},
    /* $01: the key */
    {"TTTTTTTTTT"
     "T........T"
     "T..r..r..T"
     "....K....."
     ".........."
     "T..r..r..T"
     "T........T"
     "TTTT..TTTT", NONE},
    /* $02: pond, a rupee */
    {"TTTTTTTTTT"
     "T........T"
     "T..~~~...T"
     "...~~~.$.T"
     "...~~~...T"
     "T........T"
     "T........T"
     "TTTT..TTTT", NONE},
    /* $03: the sword (east column, behind the locked door) */
    {"TTTTTTTTTT"
     "T........T"
     "T..r..r..T"
     "T...W....T"
     "T........T"
     "T..r..r..T"
     "T........T"
     "TTTT..TTTT", NONE},
    /* $10: the house; its door leads indoors to room 0 */
    {"TTTT..TTTT"
     "T........T"
     "T.HHHH...T"
     "T.hhhh...."
     "T.hDDh...."
     "T........T"
     "T........T"
     "TTTT..TTTT", GROUP_INDOORS, 0, 80, 100},
    /* $11: start room, a rupee */
    {"TTTT..TTTT"
     "T........T"
     "T.r....r.T"
     "......$..."
     ".........."
     "T.r....r.T"
     "T........T"
     "TTTT..TTTT", NONE},
    /* $12: the locked door on the east doorway */
    {"TTTT..TTTT"
     "T........T"
     "T.TT.....T"
     ".........L"
     ".........L"
     "T.TT.....T"
     "T........T"
     "TTTT..TTTT", NONE},
    /* $13: an enemy; entrance to the east column */
    {"TTTT..TTTT"
     "T........T"
     "T.r....r.T"
     "......E..T"
     ".........T"
     "T.r....r.T"
     "T........T"
     "TTTT..TTTT", NONE},
    /* $20: stairs down to the puzzle room (indoor room 1) */
    {"TTTT..TTTT"
     "T........T"
     "T..rrrr..T"
     "T..r>>r..."
     "T........."
     "T........T"
     "T........T"
     "TTTT..TTTT", GROUP_INDOORS, 1, 80, 100},
    /* $21: an enemy in an open field */
    {"TTTT..TTTT"
     "T........T"
     "T..E.....T"
     ".........."
     ".........."
     "T........T"
     "T.....r..T"
     "TTTT..TTTT", NONE},
    /* $22: two enemies, a rupee */
    {"TTTT..TTTT"
     "T........T"
     "T.E...r..T"
     "......$..T"
     ".........T"
     "T.r...E..T"
     "T........T"
     "TTTT..TTTT", NONE},
    /* $23: marsh with an enemy, a rupee */
    {"TTTT..TTTT"
     "T~~.....~T"
     "T~~..E..~T"
     "T.......$T"
     "T........T"
     "T~~.....~T"
     "T~~......T"
     "TTTT..TTTT", NONE},
    /* $30: a rupee in a tree alcove */
    {"TTTT..TTTT"
     "T........T"
     "T.TTT....T"
     "T.T$......"
     "T.T......."
     "T.TTT....T"
     "T........T"
     "TTTTTTTTTT", NONE},
    /* $31: two enemies */
    {"TTTT..TTTT"
     "T........T"
     "T.E...r..T"
     ".........."
     ".........."
     "T..r...E.T"
     "T........T"
     "TTTTTTTTTT", NONE},
    /* $32: ponds, a rupee */
    {"TTTT..TTTT"
     "T.~~...~~T"
     "T.~~...~~T"
     ".........T"
     "........$T"
     "T........T"
     "T..rr....T"
     "TTTTTTTTTT", NONE},
    /* $33: dead end with a big rupee */
    {"TTTT..TTTT"
     "T........T"
     "T.r....r.T"
     "T...G....T"
     "T........T"
     "T.r....r.T"
     "T........T"
     "TTTTTTTTTT", NONE},
};

#define NUM_INDOOR_ROOMS 3

static const Room indoors[NUM_INDOOR_ROOMS] = {
    /* 0: the house; the NPC talks when faced and A is pressed */
    {"##########"
     "#,,,,,,,,#"
     "#,,,N,,,,#"
     "#,,,,,,,,#"
     "#,,,,,,,,#"
     "#,,,,,,,,#"
     "#,,,,,,,,#"
     "####XX####", GROUP_OVERWORLD, 0x10, 64, 92},
    /* 1: puzzle room; the switch opens the bars (P) to room 2 */
    {"####PP####"
     "#,,,,,,,,#"
     "#,##,,##,#"
     "#,,,,,,,,#"
     "#,,,,,,S,#"
     "#,##,,##,#"
     "#,,,,,,,,#"
     "####XX####", GROUP_OVERWORLD, 0x20, 80, 88},
    /* 2: treasure room, a big rupee */
    {"##########"
     "#,,,,,,,,#"
     "#,,,,,,,,#"
     "#,,,,G,,,#"
     "#,,,,,,,,#"
     "#,,,,,,,,#"
     "#,,,,,,,,#"
     "####,,####", NONE},
};

/* Indoor rooms link by edges only where listed; index [room][dir], dir as wPlayerDir. */
static const uint8_t indoor_neighbors[NUM_INDOOR_ROOMS][4] = {
    {NO_ROOM, NO_ROOM, NO_ROOM, NO_ROOM},
    {2, NO_ROOM, NO_ROOM, NO_ROOM},
    {NO_ROOM, NO_ROOM, 1, NO_ROOM},
};

const uint8_t room_row_offset[ROOM_ROWS] = {0, 10, 20, 30, 40, 50, 60, 70};

const uint8_t cell_info[128] = {
    [CELL_TREE] = CI_SOLID,
    [CELL_ROCK] = CI_SOLID,
    [CELL_WATER] = CI_SOLID,
    [CELL_WALL] = CI_SOLID,
    [CELL_ROOF] = CI_SOLID,
    [CELL_HOUSE_WALL] = CI_SOLID,
    [CELL_NPC] = CI_SOLID,
    [CELL_LOCKED] = CI_LOCKED,
    [CELL_BARS] = CI_BARS,
    [CELL_SWITCH] = CI_SWITCH,
    [CELL_DOOR] = CI_WARP,
    [CELL_STAIRS] = CI_WARP,
    [CELL_EXIT_MAT] = CI_WARP,
    [CELL_RUPEE] = CI_ITEM,
    [CELL_BIG_RUPEE] = CI_ITEM,
    [CELL_KEY] = CI_ITEM,
    [CELL_SWORD] = CI_ITEM,
    [CELL_ENEMY] = CI_ENEMY,
};

/* The block each cell shows in its initial state; 0 (BLK_BLANK) means the group's ground. */
static const uint8_t cell_art[128] = {
    [CELL_TREE] = BLK_TREE,
    [CELL_ROCK] = BLK_ROCK,
    [CELL_WATER] = BLK_WATER,
    [CELL_WALL] = BLK_WALL,
    [CELL_ROOF] = BLK_ROOF,
    [CELL_HOUSE_WALL] = BLK_HOUSE_WALL,
    [CELL_NPC] = BLK_NPC,
    [CELL_LOCKED] = BLK_LOCKED,
    [CELL_BARS] = BLK_BARS,
    [CELL_SWITCH] = BLK_SWITCH_OFF,
    [CELL_DOOR] = BLK_DOOR,
    [CELL_STAIRS] = BLK_STAIRS,
    [CELL_EXIT_MAT] = BLK_MAT,
    [CELL_RUPEE] = BLK_RUPEE,
    [CELL_BIG_RUPEE] = BLK_BIG_RUPEE,
    [CELL_KEY] = BLK_KEY,
    [CELL_SWORD] = BLK_SWORD_ITEM,
};

uint8_t room_solid[ROOM_COLS * ROOM_ROWS];
uint8_t room_item_col, room_item_row;
uint8_t room_enemy_count;
uint8_t room_enemy_col[MAX_ENEMIES], room_enemy_row[MAX_ENEMIES];

static const Room *current;
static uint8_t ground_block;

static uint8_t solidity(uint8_t info)
{
    if (info & CI_SOLID)
        return SOLID;
    if ((info & CI_LOCKED) && !(wDoorFlags & DOOR_UNLOCKED))
        return SOLID_LOCKED;
    if ((info & CI_BARS) && !(wPuzzleFlags & PUZZLE_DOOR_OPEN))
        return SOLID;
    return PASSABLE;
}

void world_refresh_solid(void)
{
    const char *map = current->map;
    uint8_t *solid = room_solid;
    uint8_t i;
    for (i = 0; i < ROOM_COLS * ROOM_ROWS; i++)
        *solid++ = solidity(cell_info[(uint8_t)*map++]);
}

/* Also scans the room once for its item and enemy spawns (wGroup/wRoom must already be set,
 * for the room's ITEM flag). */
void world_set_room(uint8_t group, uint8_t room)
{
    const char *map;
    uint8_t *solid = room_solid;
    uint8_t row, col, info;
    uint8_t item_taken = *world_room_flags() & ROOMFLAG_ITEM;

    if (group == GROUP_OVERWORLD)
        current = &overworld[((room >> 4) << 2) | (room & 0x03)];
    else
        current = &indoors[room];
    map = current->map;
    ground_block = group == GROUP_OVERWORLD ? BLK_GRASS : BLK_FLOOR;
    room_item_col = NO_CELL;
    room_enemy_count = 0;
    for (row = 0; row < ROOM_ROWS; row++) {
        for (col = 0; col < ROOM_COLS; col++) {
            info = cell_info[(uint8_t)*map++];
            if (!info) {
                *solid++ = PASSABLE;
                continue;
            }
            *solid++ = solidity(info);
            if ((info & CI_ITEM) && !item_taken) {
                room_item_col = col;
                room_item_row = row;
            } else if ((info & CI_ENEMY) && room_enemy_count < MAX_ENEMIES) {
                room_enemy_col[room_enemy_count] = col;
                room_enemy_row[room_enemy_count] = row;
                room_enemy_count++;
            }
        }
    }
}

const Room *world_room(void)
{
    return current;
}

const char *world_map(void)
{
    return current->map;
}

uint8_t world_cell(uint8_t col, uint8_t row)
{
    return (uint8_t)current->map[room_row_offset[row] + col];
}

uint8_t world_cell_at(uint8_t px, uint8_t py)
{
    return world_cell(px >> 4, py >> 4);
}

/* Room id next to the current one in direction dir (same group), or NO_ROOM. The room maps
 * decide whether a doorway actually exists; this only says where it would lead. */
uint8_t world_neighbor(uint8_t dir)
{
    uint8_t room = wRoom;
    uint8_t row = room >> 4;
    uint8_t col = room & 0x0F;

    if (wGroup != GROUP_OVERWORLD)
        return indoor_neighbors[room][dir];
    switch (dir) {
    case DIR_UP:
        return row ? (uint8_t)(room - 0x10) : NO_ROOM;
    case DIR_DOWN:
        return row < 3 ? (uint8_t)(room + 0x10) : NO_ROOM;
    case DIR_LEFT:
        return col ? (uint8_t)(room - 1) : NO_ROOM;
    default:
        return col < 3 ? (uint8_t)(room + 1) : NO_ROOM;
    }
}

volatile uint8_t *world_room_flags(void)
{
    return wGroup == GROUP_OVERWORLD ? &wRoomFlags0[wRoom] : &wRoomFlags1[wRoom];
}

/* What a cell looks like right now: opened doors, pressed switches and taken items change it. */
uint8_t cell_block(uint8_t cell)
{
    uint8_t info = cell_info[cell];
    uint8_t block = cell_art[cell];

    if (info & (CI_ITEM | CI_LOCKED | CI_BARS | CI_SWITCH)) {
        if ((info & CI_ITEM) && (*world_room_flags() & ROOMFLAG_ITEM))
            block = BLK_BLANK;
        else if ((info & CI_LOCKED) && (wDoorFlags & DOOR_UNLOCKED))
            block = BLK_BLANK;
        else if ((info & CI_BARS) && (wPuzzleFlags & PUZZLE_DOOR_OPEN))
            block = BLK_BLANK;
        else if ((info & CI_SWITCH) && (wPuzzleFlags & PUZZLE_SWITCH_PRESSED))
            block = BLK_SWITCH_ON;
    }
    return block ? block : ground_block;
}
