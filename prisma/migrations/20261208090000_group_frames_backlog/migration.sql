-- Groups created before 20261207163117_group_top_frames have an empty top_frames: the frames their signature hashed
-- are only inside their messages' stacks. This backlog names them; a background task (lib/server/engines/group-frames/)
-- re-derives each one's frames from its newest message with the drainer's own normaliser, and writes them only when
-- the signature it computes is the group's (so a changed grouping rule never puts another group's frames on it).
-- A group that truly has no frames is listed once and leaves the backlog with its empty array.
CREATE TABLE group_frames_backlog (
  group_id bigint PRIMARY KEY REFERENCES error_groups (id) ON DELETE CASCADE
);

INSERT INTO group_frames_backlog (group_id)
SELECT id FROM error_groups WHERE top_frames = '{}' AND signature NOT IN ('lazarus:held', 'v1:unparsed');
