/*
 * The test world's game rules and main loop.
 *
 * The CPU spends most of each frame in `halt` (that is what makes PyBoy fast): VBlank wakes it to
 * apply the screen changes recorded by the last step, line 1 wakes it to read the joypad and run
 * one game step. Everything the outside world observes lives in the fixed WRAM table (wram.h);
 * nothing depends on uninitialised RAM or timing, so the same inputs from power-on always give
 * the same RAM.
 */
#include <stdint.h>

#include "gfx.h"
#include "hw.h"
#include "screen.h"
#include "world.h"
#include "wram.h"

#define START_ROOM       0x11
#define START_X          80
#define START_Y          72
#define START_MAX_HEALTH 12

/* Player and enemies share a 12x12 hitbox around their centre: [c - 6, c + 5]. */
#define HIT_LO 6
#define HIT_HI 5

/* Range of the player's centre inside a room; stepping past it through a doorway enters the
 * neighbour room at the opposite edge. */
#define EDGE_MIN   8
#define EDGE_MAX_X 151
#define EDGE_MAX_Y 119

/* Enemy centres stay off the border ring of cells, so enemies never block a doorway. */
#define ENEMY_MIN   22
#define ENEMY_MAX_X 137
#define ENEMY_MAX_Y 105

#define CONTACT_RANGE     12
#define CONTACT_DAMAGE    2
#define INVINCIBLE_FRAMES 60
#define SWORD_FRAMES      16
#define SWORD_REACH       14
#define SWORD_HIT_RANGE   10
#define SWORD_SPRITE_DIST 12
#define TALK_REACH        14

#define RUPEE_VALUE     0x05 /* BCD */
#define BIG_RUPEE_VALUE 0x50 /* BCD */
#define RUPEES_MAX_HI   0x09 /* 999, as in Oracle */
#define DEATHS_MAX_HI   0x99

#define LFSR_SEED 0xACE1

#define STEP_MAY_LEAVE 0x01
#define STEP_MAY_NUDGE 0x02

/* Indexed by DIR_* (wPlayerDir's encoding). */
static const int8_t dir_dx[4] = {0, 1, 0, -1};
static const int8_t dir_dy[4] = {-1, 0, 1, 0};
static const uint8_t dir_key[4] = {KEY_UP, KEY_RIGHT, KEY_DOWN, KEY_LEFT};

static uint8_t prev_keys;
static uint16_t lfsr;
static uint8_t room_changed;
static uint8_t player_moved;
static uint8_t enemy_dir[MAX_ENEMIES];
static uint8_t enemy_timer[MAX_ENEMIES];

static void halt(void)
{
    __asm
        halt
        nop
    __endasm;
}

/* Two interrupts wake the CPU: VBlank (line 144), when VRAM is free for screen_vblank(), and
 * LY=LYC at line 1, when the game step runs. PyBoy ends a tick() between lines 153 and 0, so
 * the step (lines 1 to ~20) never straddles a tick boundary and every tick() leaves WRAM in a
 * consistent, fully updated state. The loops skip wake-ups by the other interrupt. */
#define LYC_GAME_STEP 1

static void wait_vblank(void)
{
    do
        halt();
    while (rLY < LY_VBLANK);
}

static void wait_game_step(void)
{
    /* After a redraw the LCD has just been switched on at line 0: no need to wait. */
    while (rLY >= LY_VBLANK)
        halt();
}

static uint8_t read_joypad(void)
{
    uint8_t dpad, buttons;

    rP1 = P1_SELECT_DPAD;
    dpad = rP1;
    dpad = rP1;
    rP1 = P1_SELECT_BUTTONS;
    /* Repeated reads let the matrix lines settle on hardware. */
    buttons = rP1;
    buttons = rP1;
    buttons = rP1;
    buttons = rP1;
    rP1 = P1_SELECT_NONE;
    return (uint8_t)((~buttons & 0x0F) | ((~dpad & 0x0F) << 4));
}

/* 16-bit Galois LFSR: cheap, and seeded to a constant at boot it makes enemies deterministic. */
static uint8_t random8(void)
{
    uint8_t lsb = (uint8_t)(lfsr & 1);
    lfsr >>= 1;
    if (lsb)
        lfsr ^= 0xB400;
    return (uint8_t)lfsr;
}

static uint8_t absdiff(uint8_t a, uint8_t b)
{
    return a > b ? (uint8_t)(a - b) : (uint8_t)(b - a);
}

static uint8_t bcd_add(uint8_t a, uint8_t b, uint8_t *carry)
{
    uint8_t lo = (uint8_t)((a & 0x0F) + (b & 0x0F) + *carry);
    uint8_t hi = (uint8_t)((a >> 4) + (b >> 4));
    if (lo > 9) {
        lo -= 10;
        hi++;
    }
    *carry = 0;
    if (hi > 9) {
        hi -= 10;
        *carry = 1;
    }
    return (uint8_t)((hi << 4) | lo);
}

/* Adds a two-digit BCD amount to a two-byte BCD counter (low byte first, like Oracle),
 * saturating at max_hi:99. */
static void bcd_counter_add(volatile uint8_t *counter, uint8_t amount, uint8_t max_hi)
{
    uint8_t carry = 0;
    uint8_t lo = bcd_add(counter[0], amount, &carry);
    uint8_t hi = bcd_add(counter[1], 0, &carry);
    if (carry || hi > max_hi) {
        lo = 0x99;
        hi = max_hi;
    }
    counter[0] = lo;
    counter[1] = hi;
}

static void enemy_new_course(uint8_t i)
{
    uint8_t r = random8();
    enemy_dir[i] = r & 3;
    enemy_timer[i] = (uint8_t)(24 + ((r >> 2) & 31));
}

static void enter_room(uint8_t group, uint8_t room, uint8_t x, uint8_t y)
{
    uint8_t i;
    volatile uint8_t *slot;

    wGroup = group;
    wRoom = room;
    wPlayerX = x;
    wPlayerY = y;
    *world_room_flags() |= ROOMFLAG_VISITED;
    world_set_room(group, room);

    for (i = 0; i < MAX_ENEMIES * ENEMY_SLOT_SIZE; i++)
        wEnemySlots[i] = 0;
    /* Enemies come back whenever the room is entered again, as in Zelda. */
    slot = wEnemySlots;
    for (i = 0; i < room_enemy_count; i++, slot += ENEMY_SLOT_SIZE) {
        slot[ENEMY_ACTIVE] = 1;
        slot[ENEMY_X] = (uint8_t)(room_enemy_col[i] * CELL_SIZE + CELL_SIZE / 2);
        slot[ENEMY_Y] = (uint8_t)(room_enemy_row[i] * CELL_SIZE + CELL_SIZE / 2);
        enemy_new_course(i);
    }
    wNumEnemies = room_enemy_count;
    room_changed = 1;
    screen_request_room();
}

static void leave_room(uint8_t dir)
{
    uint8_t next = world_neighbor(dir);
    uint8_t x = wPlayerX, y = wPlayerY;

    if (next == NO_ROOM)
        return;
    switch (dir) {
    case DIR_UP:
        y = EDGE_MAX_Y;
        break;
    case DIR_DOWN:
        y = EDGE_MIN;
        break;
    case DIR_LEFT:
        x = EDGE_MAX_X;
        break;
    default:
        x = EDGE_MIN;
        break;
    }
    enter_room(wGroup, next, x, y);
}

/* Redraws every cell of the current room that shows `cell`. */
static void redraw_cells(uint8_t cell)
{
    uint8_t col, row;
    for (row = 0; row < ROOM_ROWS; row++)
        for (col = 0; col < ROOM_COLS; col++)
            if (world_cell(col, row) == cell)
                screen_request_cell(col, row);
}

static void try_unlock(void)
{
    if (!wKeys)
        return;
    wKeys--;
    wDoorFlags |= DOOR_UNLOCKED;
    world_refresh_solid();
    redraw_cells(CELL_LOCKED);
    screen_request_hud();
}

static void press_switch(void)
{
    wPuzzleFlags |= PUZZLE_SWITCH_PRESSED | PUZZLE_DOOR_OPEN;
    world_refresh_solid();
    redraw_cells(CELL_SWITCH);
    redraw_cells(CELL_BARS);
}

static void collect_item(void)
{
    switch (world_cell(room_item_col, room_item_row)) {
    case CELL_RUPEE:
        bcd_counter_add(wRupees, RUPEE_VALUE, RUPEES_MAX_HI);
        break;
    case CELL_BIG_RUPEE:
        bcd_counter_add(wRupees, BIG_RUPEE_VALUE, RUPEES_MAX_HI);
        break;
    case CELL_KEY:
        wKeys++;
        wTreasureFlags |= TREASURE_KEY;
        break;
    case CELL_SWORD:
        wSwordLevel = 1;
        wTreasureFlags |= TREASURE_SWORD;
        break;
    }
    *world_room_flags() |= ROOMFLAG_ITEM;
    screen_request_cell(room_item_col, room_item_row);
    screen_request_hud();
    room_item_col = NO_CELL;
}

static uint8_t player_overlaps_cell(uint8_t col, uint8_t row)
{
    /* All sums stay below 256 inside a 160x128 room, so 8-bit arithmetic is exact. */
    uint8_t x = (uint8_t)(wPlayerX + HIT_HI), y = (uint8_t)(wPlayerY + HIT_HI);
    uint8_t left = (uint8_t)(col * CELL_SIZE), top = (uint8_t)(row * CELL_SIZE);
    return (uint8_t)(x - left) < (uint8_t)(CELL_SIZE + HIT_LO + HIT_HI) &&
           (uint8_t)(y - top) < (uint8_t)(CELL_SIZE + HIT_LO + HIT_HI);
}

/* Events of the cells the player stands on: warps and switches by the centre (you must step
 * onto them), items by any overlap (touching is enough). */
static void check_player_cell(void)
{
    uint8_t info = cell_info[world_cell_at(wPlayerX, wPlayerY)];
    const Room *room;

    if (info & CI_WARP) {
        room = world_room();
        enter_room(room->warp_group, room->warp_room, room->warp_x, room->warp_y);
        return;
    }
    if ((info & CI_SWITCH) && !(wPuzzleFlags & PUZZLE_SWITCH_PRESSED))
        press_switch();
    if (room_item_col != NO_CELL && player_overlaps_cell(room_item_col, room_item_row))
        collect_item();
}

/* Moves the player one pixel in direction dir if the leading edge of its hitbox is free. */
static void step_player(uint8_t dir, uint8_t mode)
{
    uint8_t x = wPlayerX, y = wPlayerY;
    uint8_t ax, ay, bx, by, a, b;

    /* (ax, ay) and (bx, by) are the two corners of the leading edge, left/top one first. */
    switch (dir) {
    case DIR_UP:
        y--;
        ax = (uint8_t)(x - HIT_LO);
        bx = (uint8_t)(x + HIT_HI);
        ay = by = (uint8_t)(y - HIT_LO);
        break;
    case DIR_DOWN:
        y++;
        ax = (uint8_t)(x - HIT_LO);
        bx = (uint8_t)(x + HIT_HI);
        ay = by = (uint8_t)(y + HIT_HI);
        break;
    case DIR_LEFT:
        x--;
        ax = bx = (uint8_t)(x - HIT_LO);
        ay = (uint8_t)(y - HIT_LO);
        by = (uint8_t)(y + HIT_HI);
        break;
    default:
        x++;
        ax = bx = (uint8_t)(x + HIT_HI);
        ay = (uint8_t)(y - HIT_LO);
        by = (uint8_t)(y + HIT_HI);
        break;
    }
    a = SOLID_AT(ax, ay);
    b = SOLID_AT(bx, by);

    if (!a && !b) {
        if (x < EDGE_MIN || x > EDGE_MAX_X || y < EDGE_MIN || y > EDGE_MAX_Y) {
            if (mode & STEP_MAY_LEAVE)
                leave_room(dir);
            return;
        }
        wPlayerX = x;
        wPlayerY = y;
        player_moved = 1;
        return;
    }
    if (a == SOLID_LOCKED || b == SOLID_LOCKED) {
        try_unlock();
        return;
    }
    /* Blocked by one corner only: slide towards the free side, so that walking into a
     * doorway or gap slightly off-centre still gets through (as in Zelda). */
    if ((mode & STEP_MAY_NUDGE) && !a != !b) {
        if (dir == DIR_UP || dir == DIR_DOWN)
            step_player(a ? DIR_RIGHT : DIR_LEFT, 0);
        else
            step_player(a ? DIR_DOWN : DIR_UP, 0);
    }
}

static void update_facing(uint8_t keys)
{
    /* Keep facing while that direction is still held, as Oracle does on diagonals. */
    if (keys & dir_key[wPlayerDir])
        return;
    if (keys & KEY_UP)
        wPlayerDir = DIR_UP;
    else if (keys & KEY_DOWN)
        wPlayerDir = DIR_DOWN;
    else if (keys & KEY_LEFT)
        wPlayerDir = DIR_LEFT;
    else if (keys & KEY_RIGHT)
        wPlayerDir = DIR_RIGHT;
}

static void move_player(uint8_t keys)
{
    uint8_t horizontal = 0xFF, vertical = 0xFF, mode;

    if (!(keys & (KEY_UP | KEY_DOWN | KEY_LEFT | KEY_RIGHT)))
        return;
    update_facing(keys);
    /* Opposite directions cancel out. */
    if ((keys & (KEY_LEFT | KEY_RIGHT)) == KEY_RIGHT)
        horizontal = DIR_RIGHT;
    else if ((keys & (KEY_LEFT | KEY_RIGHT)) == KEY_LEFT)
        horizontal = DIR_LEFT;
    if ((keys & (KEY_UP | KEY_DOWN)) == KEY_DOWN)
        vertical = DIR_DOWN;
    else if ((keys & (KEY_UP | KEY_DOWN)) == KEY_UP)
        vertical = DIR_UP;
    /* Sliding round corners only for a single direction: on a diagonal the other axis moves. */
    mode = (horizontal == 0xFF || vertical == 0xFF) ? STEP_MAY_LEAVE | STEP_MAY_NUDGE : STEP_MAY_LEAVE;

    player_moved = 0;
    if (horizontal != 0xFF) {
        step_player(horizontal, mode);
        if (room_changed)
            return;
    }
    if (vertical != 0xFF) {
        step_player(vertical, mode);
        if (room_changed)
            return;
    }
    if (player_moved)
        check_player_cell();
}

/* The cell just in front of the player, or 0 when that point is outside the room. */
static uint8_t facing_cell(void)
{
    int16_t px = (int16_t)wPlayerX + dir_dx[wPlayerDir] * TALK_REACH;
    int16_t py = (int16_t)wPlayerY + dir_dy[wPlayerDir] * TALK_REACH;
    if (px < 0 || px >= ROOM_COLS * CELL_SIZE || py < 0 || py >= ROOM_ROWS * CELL_SIZE)
        return 0;
    return world_cell_at((uint8_t)px, (uint8_t)py);
}

static uint8_t enemy_box_free(uint8_t cx, uint8_t cy)
{
    uint8_t left = (uint8_t)(cx - HIT_LO), right = (uint8_t)(cx + HIT_HI);
    uint8_t top = (uint8_t)(cy - HIT_LO), bottom = (uint8_t)(cy + HIT_HI);
    return !SOLID_AT(left, top) && !SOLID_AT(right, top) && !SOLID_AT(left, bottom) && !SOLID_AT(right, bottom);
}

static void update_enemies(void)
{
    uint8_t i, d, nx, ny;
    volatile uint8_t *slot = wEnemySlots;

    if (!wNumEnemies)
        return;
    for (i = 0; i < MAX_ENEMIES; i++, slot += ENEMY_SLOT_SIZE) {
        if (!slot[ENEMY_ACTIVE])
            continue;
        if (!--enemy_timer[i])
            enemy_new_course(i);
        /* Half the player's speed, so an agent can always outrun them. */
        if (wFrameCounter & 1)
            continue;
        d = enemy_dir[i];
        nx = (uint8_t)(slot[ENEMY_X] + dir_dx[d]);
        ny = (uint8_t)(slot[ENEMY_Y] + dir_dy[d]);
        if (nx < ENEMY_MIN || nx > ENEMY_MAX_X || ny < ENEMY_MIN || ny > ENEMY_MAX_Y ||
            !enemy_box_free(nx, ny)) {
            enemy_new_course(i);
            continue;
        }
        slot[ENEMY_X] = nx;
        slot[ENEMY_Y] = ny;
    }
}

static void sword_hits(void)
{
    uint8_t i, d = wPlayerDir;
    uint8_t sx = (uint8_t)(wPlayerX + dir_dx[d] * SWORD_REACH);
    uint8_t sy = (uint8_t)(wPlayerY + dir_dy[d] * SWORD_REACH);
    volatile uint8_t *slot = wEnemySlots;

    for (i = 0; i < MAX_ENEMIES; i++, slot += ENEMY_SLOT_SIZE) {
        if (slot[ENEMY_ACTIVE] && absdiff(sx, slot[ENEMY_X]) <= SWORD_HIT_RANGE &&
            absdiff(sy, slot[ENEMY_Y]) <= SWORD_HIT_RANGE) {
            slot[ENEMY_ACTIVE] = 0;
            wNumEnemies--;
            if (wEnemiesDefeated != 0xFF)
                wEnemiesDefeated++;
        }
    }
}

static void check_enemy_contact(void)
{
    uint8_t i, x = wPlayerX, y = wPlayerY;
    volatile uint8_t *slot = wEnemySlots;

    if (wInvincibleTimer || !wNumEnemies)
        return;
    for (i = 0; i < MAX_ENEMIES; i++, slot += ENEMY_SLOT_SIZE) {
        if (slot[ENEMY_ACTIVE] && absdiff(x, slot[ENEMY_X]) < CONTACT_RANGE &&
            absdiff(y, slot[ENEMY_Y]) < CONTACT_RANGE) {
            wHealth = wHealth > CONTACT_DAMAGE ? (uint8_t)(wHealth - CONTACT_DAMAGE) : 0;
            wInvincibleTimer = INVINCIBLE_FRAMES;
            screen_request_hud();
            return;
        }
    }
}

static void respawn(void)
{
    wHealth = wMaxHealth;
    wInvincibleTimer = 0;
    wSwordTimer = 0;
    wPlayerDir = DIR_DOWN;
    enter_room(GROUP_OVERWORLD, START_ROOM, START_X, START_Y);
    screen_request_hud();
}

/* One game step; returns 0 when the game is frozen (menu or text box), so nothing moved. */
static uint8_t game_frame(uint8_t keys)
{
    /* Menu, text and actions react to new presses only, so a held button never toggles twice. */
    uint8_t pressed = keys & (uint8_t)~prev_keys;

    prev_keys = keys;
    wKeysPressed = keys;
    room_changed = 0;

    if (wMenuOpen) {
        if (pressed & KEY_START) {
            wMenuOpen = 0;
            screen_show_window(WINDOW_NONE);
        }
        return 0;
    }
    if (wTextActive) {
        if (pressed & KEY_A) {
            wTextActive = 0;
            screen_show_window(WINDOW_NONE);
        }
        return 0;
    }
    if (pressed & KEY_START) {
        wMenuOpen = 1;
        screen_show_window(WINDOW_MENU);
        return 0;
    }

    wFrameCounter++;
    if (wSwordTimer) {
        /* The player stands still while swinging. */
        if (--wSwordTimer)
            sword_hits();
    } else if ((pressed & KEY_B) && wSwordLevel) {
        wSwordTimer = SWORD_FRAMES;
        sword_hits();
    } else if ((pressed & KEY_A) && facing_cell() == CELL_NPC) {
        wTextActive = 1;
        screen_show_window(WINDOW_TEXT);
        return 0;
    } else {
        move_player(keys);
    }

    update_enemies();
    if (wInvincibleTimer)
        wInvincibleTimer--;
    check_enemy_contact();
    if (!wHealth) {
        bcd_counter_add(wDeathCounter, 0x01, DEATHS_MAX_HI);
        respawn();
    }
    return 1;
}

static void draw_sprites(void)
{
    static const uint8_t hero_block[4] = {BLK_HERO_UP, BLK_HERO_RIGHT, BLK_HERO_DOWN, BLK_HERO_RIGHT};
    static const uint8_t hero_flags[4] = {0, 0, 0, OAM_FLAG_XFLIP};
    static const uint8_t sword_block[4] = {BLK_SWORD_UP, BLK_SWORD_RIGHT, BLK_SWORD_UP, BLK_SWORD_RIGHT};
    static const uint8_t sword_flags[4] = {0, 0, OAM_FLAG_YFLIP, OAM_FLAG_XFLIP};
    uint8_t i, d = wPlayerDir, x = wPlayerX, y = wPlayerY;
    int16_t sx, sy;
    volatile uint8_t *slot = wEnemySlots;

    sprites_begin();
    /* Blink while invincible. */
    if (!(wInvincibleTimer & 4))
        sprite16(x, y, hero_block[d], hero_flags[d]);
    if (wSwordTimer) {
        sx = (int16_t)x + dir_dx[d] * SWORD_SPRITE_DIST;
        sy = (int16_t)y + dir_dy[d] * SWORD_SPRITE_DIST;
        if (sx >= 8 && sx < ROOM_COLS * CELL_SIZE && sy >= 0 && sy < ROOM_ROWS * CELL_SIZE)
            sprite16((uint8_t)sx, (uint8_t)sy, sword_block[d], sword_flags[d]);
    }
    for (i = 0; i < MAX_ENEMIES; i++, slot += ENEMY_SLOT_SIZE) {
        if (slot[ENEMY_ACTIVE])
            sprite16(slot[ENEMY_X], slot[ENEMY_Y], (wFrameCounter & 16) ? BLK_ENEMY_B : BLK_ENEMY_A, 0);
    }
    sprites_end();
}

void main(void)
{
    rNR52 = 0; /* no sound */
    screen_init();

    lfsr = LFSR_SEED;
    wMaxHealth = START_MAX_HEALTH;
    wHealth = START_MAX_HEALTH;
    wPlayerDir = DIR_DOWN;
    enter_room(GROUP_OVERWORLD, START_ROOM, START_X, START_Y);
    screen_start();
    draw_sprites();

    rLYC = LYC_GAME_STEP;
    rSTAT = STAT_LYC_IRQ;
    rIF = 0;
    rIE = IE_VBLANK | IE_STAT;
    __asm
        ei
    __endasm;
    wGameState = GAMESTATE_GAMEPLAY;

    for (;;) {
        wait_vblank();
        screen_vblank();
        wait_game_step();
        if (game_frame(read_joypad()))
            draw_sprites();
    }
}
