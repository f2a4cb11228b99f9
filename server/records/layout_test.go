package records

import "github.com/ferry-mq/ferry/storage/recordbatch"

// Byte positions of batch header fields, for tests that build or damage
// batches by hand (the layout itself is recordbatch's).
const (
	offBaseOffset   = 0
	offLength       = 8
	offLeaderEpoch  = 12
	offMagic        = 16
	offCRC          = 17
	offAttributes   = 21
	offLastDelta    = 23
	offBaseTime     = 27
	offMaxTime      = 35
	offProducerID   = 43
	offProducerEp   = 51
	offBaseSequence = 53
	offRecordCount  = 57

	headerSize     = recordbatch.HeaderSize
	lengthFieldEnd = recordbatch.LogOverhead
	magicV2        = recordbatch.Magic

	attrLogAppendTime = recordbatch.AttrLogAppendTime
	attrTransactional = recordbatch.AttrTransactional
	attrControl       = recordbatch.AttrControl
)
