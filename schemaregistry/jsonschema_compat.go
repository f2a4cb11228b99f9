package schemaregistry

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// JSON Schema compatibility, Confluent's rules: the differences from the
// original schema (the writer's) to the update (the reader's) are listed
// with a type each, and the reader reads the writer's data when every
// difference is one of the compatible types (jsCompatibleChanges). Under
// BACKWARD the old schema is the original and the new one the update;
// FORWARD swaps them; FULL does both. docs/registry-jsonschema.md has the
// table of cases.

type jsDiffKind string

// The difference types, named as Confluent's Difference.Type.
const (
	jdIDChanged          jsDiffKind = "ID_CHANGED"
	jdDescriptionChanged jsDiffKind = "DESCRIPTION_CHANGED"
	jdTitleChanged       jsDiffKind = "TITLE_CHANGED"
	jdDefaultChanged     jsDiffKind = "DEFAULT_CHANGED"
	jdSchemaAdded        jsDiffKind = "SCHEMA_ADDED"
	jdSchemaRemoved      jsDiffKind = "SCHEMA_REMOVED"
	jdTypeExtended       jsDiffKind = "TYPE_EXTENDED"
	jdTypeNarrowed       jsDiffKind = "TYPE_NARROWED"
	jdTypeChanged        jsDiffKind = "TYPE_CHANGED"

	jdRequiredAttributeAdded            jsDiffKind = "REQUIRED_ATTRIBUTE_ADDED"
	jdRequiredAttributeWithDefaultAdded jsDiffKind = "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
	jdRequiredAttributeRemoved          jsDiffKind = "REQUIRED_ATTRIBUTE_REMOVED"

	jdAdditionalPropertiesAdded    jsDiffKind = "ADDITIONAL_PROPERTIES_ADDED"
	jdAdditionalPropertiesRemoved  jsDiffKind = "ADDITIONAL_PROPERTIES_REMOVED"
	jdAdditionalPropertiesExtended jsDiffKind = "ADDITIONAL_PROPERTIES_EXTENDED"
	jdAdditionalPropertiesNarrowed jsDiffKind = "ADDITIONAL_PROPERTIES_NARROWED"

	jdDependencyArrayAdded    jsDiffKind = "DEPENDENCY_ARRAY_ADDED"
	jdDependencyArrayRemoved  jsDiffKind = "DEPENDENCY_ARRAY_REMOVED"
	jdDependencyArrayExtended jsDiffKind = "DEPENDENCY_ARRAY_EXTENDED"
	jdDependencyArrayNarrowed jsDiffKind = "DEPENDENCY_ARRAY_NARROWED"
	jdDependencyArrayChanged  jsDiffKind = "DEPENDENCY_ARRAY_CHANGED"
	jdDependencySchemaAdded   jsDiffKind = "DEPENDENCY_SCHEMA_ADDED"
	jdDependencySchemaRemoved jsDiffKind = "DEPENDENCY_SCHEMA_REMOVED"

	jdRequiredPropertyAddedToOpen     jsDiffKind = "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
	jdRequiredPropertyDefaultToOpen   jsDiffKind = "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"
	jdOptionalPropertyAddedToOpen     jsDiffKind = "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
	jdPropertyWithEmptyAddedToOpen    jsDiffKind = "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
	jdRequiredPropertyAddedToUnopen   jsDiffKind = "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
	jdRequiredPropertyDefaultToUnopen jsDiffKind = "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
	jdOptionalPropertyAddedToUnopen   jsDiffKind = "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
	jdPropertyRemovedFromOpen         jsDiffKind = "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL"
	jdPropertyFalseRemovedFromClosed  jsDiffKind = "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	jdPropertyRemovedFromClosed       jsDiffKind = "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	jdPropertyRemovedCovered          jsDiffKind = "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jdPropertyRemovedNotCovered       jsDiffKind = "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jdPropertyAddedCovered            jsDiffKind = "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jdPropertyAddedNotCovered         jsDiffKind = "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"

	jdUnevaluatedPropertiesAdded    jsDiffKind = "UNEVALUATED_PROPERTIES_ADDED"
	jdUnevaluatedPropertiesRemoved  jsDiffKind = "UNEVALUATED_PROPERTIES_REMOVED"
	jdUnevaluatedPropertiesExtended jsDiffKind = "UNEVALUATED_PROPERTIES_EXTENDED"
	jdUnevaluatedPropertiesNarrowed jsDiffKind = "UNEVALUATED_PROPERTIES_NARROWED"
	jdUnevaluatedItemsAdded         jsDiffKind = "UNEVALUATED_ITEMS_ADDED"
	jdUnevaluatedItemsRemoved       jsDiffKind = "UNEVALUATED_ITEMS_REMOVED"
	jdUnevaluatedItemsExtended      jsDiffKind = "UNEVALUATED_ITEMS_EXTENDED"
	jdUnevaluatedItemsNarrowed      jsDiffKind = "UNEVALUATED_ITEMS_NARROWED"

	jdUniqueItemsAdded          jsDiffKind = "UNIQUE_ITEMS_ADDED"
	jdUniqueItemsRemoved        jsDiffKind = "UNIQUE_ITEMS_REMOVED"
	jdAdditionalItemsAdded      jsDiffKind = "ADDITIONAL_ITEMS_ADDED"
	jdAdditionalItemsRemoved    jsDiffKind = "ADDITIONAL_ITEMS_REMOVED"
	jdAdditionalItemsExtended   jsDiffKind = "ADDITIONAL_ITEMS_EXTENDED"
	jdAdditionalItemsNarrowed   jsDiffKind = "ADDITIONAL_ITEMS_NARROWED"
	jdItemAddedToOpen           jsDiffKind = "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
	jdItemWithEmptyAddedToOpen  jsDiffKind = "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
	jdItemAddedToClosed         jsDiffKind = "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL"
	jdItemRemovedFromOpen       jsDiffKind = "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL"
	jdItemFalseRemovedFromClose jsDiffKind = "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	jdItemRemovedFromClosed     jsDiffKind = "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	jdItemRemovedCovered        jsDiffKind = "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jdItemRemovedNotCovered     jsDiffKind = "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jdItemAddedCovered          jsDiffKind = "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jdItemAddedNotCovered       jsDiffKind = "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"

	jdEnumArrayExtended jsDiffKind = "ENUM_ARRAY_EXTENDED"
	jdEnumArrayNarrowed jsDiffKind = "ENUM_ARRAY_NARROWED"
	jdEnumArrayChanged  jsDiffKind = "ENUM_ARRAY_CHANGED"

	jdCombinedTypeExtended   jsDiffKind = "COMBINED_TYPE_EXTENDED"
	jdCombinedTypeChanged    jsDiffKind = "COMBINED_TYPE_CHANGED"
	jdProductTypeExtended    jsDiffKind = "PRODUCT_TYPE_EXTENDED"
	jdProductTypeNarrowed    jsDiffKind = "PRODUCT_TYPE_NARROWED"
	jdSumTypeExtended        jsDiffKind = "SUM_TYPE_EXTENDED"
	jdSumTypeNarrowed        jsDiffKind = "SUM_TYPE_NARROWED"
	jdCombinedSubschemasChgd jsDiffKind = "COMBINED_TYPE_SUBSCHEMAS_CHANGED"
	jdNotTypeExtended        jsDiffKind = "NOT_TYPE_EXTENDED"
	jdNotTypeNarrowed        jsDiffKind = "NOT_TYPE_NARROWED"

	// jdTooComplex is ferry's own: the check ran out of its step budget
	// (maxJSONCompareSteps) and cannot vouch for the pair.
	jdTooComplex jsDiffKind = "COMPARISON_TOO_COMPLEX"
)

// Bounded constraints come in four flavours per keyword: added, removed,
// increased, decreased ("<KEYWORD>_ADDED" and so on).
func boundKind(keyword, change string) jsDiffKind {
	var b strings.Builder
	for i, r := range keyword {
		if r >= 'A' && r <= 'Z' && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return jsDiffKind(strings.ToUpper(b.String()) + "_" + change)
}

// jsCompatibleChanges are the difference types a reader tolerates
// (Confluent's SchemaDiff.COMPATIBLE_CHANGES_STRICT, its default).
var jsCompatibleChanges = map[jsDiffKind]bool{
	jdIDChanged: true, jdDescriptionChanged: true, jdTitleChanged: true, jdDefaultChanged: true,
	jdSchemaRemoved: true, jdTypeExtended: true,
	"MAX_LENGTH_INCREASED": true, "MAX_LENGTH_REMOVED": true, "MIN_LENGTH_DECREASED": true, "MIN_LENGTH_REMOVED": true,
	"PATTERN_REMOVED":   true,
	"MAXIMUM_INCREASED": true, "MAXIMUM_REMOVED": true, "MINIMUM_DECREASED": true, "MINIMUM_REMOVED": true,
	"EXCLUSIVE_MAXIMUM_INCREASED": true, "EXCLUSIVE_MAXIMUM_REMOVED": true,
	"EXCLUSIVE_MINIMUM_DECREASED": true, "EXCLUSIVE_MINIMUM_REMOVED": true,
	"MULTIPLE_OF_REDUCED": true, "MULTIPLE_OF_REMOVED": true,
	jdRequiredAttributeWithDefaultAdded: true, jdRequiredAttributeRemoved: true,
	jdDependencyArrayNarrowed: true, jdDependencyArrayRemoved: true, jdDependencySchemaRemoved: true,
	"MAX_PROPERTIES_INCREASED": true, "MAX_PROPERTIES_REMOVED": true,
	"MIN_PROPERTIES_DECREASED": true, "MIN_PROPERTIES_REMOVED": true,
	jdAdditionalPropertiesAdded: true, jdAdditionalPropertiesExtended: true,
	jdUnevaluatedPropertiesAdded: true, jdUnevaluatedPropertiesExtended: true,
	jdUnevaluatedItemsAdded: true, jdUnevaluatedItemsExtended: true,
	jdPropertyWithEmptyAddedToOpen: true, jdRequiredPropertyDefaultToUnopen: true, jdOptionalPropertyAddedToUnopen: true,
	jdPropertyFalseRemovedFromClosed: true, jdPropertyRemovedFromOpen: true,
	jdPropertyAddedCovered: true, jdPropertyRemovedCovered: true,
	"MAX_ITEMS_INCREASED": true, "MAX_ITEMS_REMOVED": true, "MIN_ITEMS_DECREASED": true, "MIN_ITEMS_REMOVED": true,
	"MAX_CONTAINS_INCREASED": true, "MAX_CONTAINS_REMOVED": true, "MIN_CONTAINS_DECREASED": true, "MIN_CONTAINS_REMOVED": true,
	jdUniqueItemsRemoved: true, jdAdditionalItemsAdded: true, jdAdditionalItemsExtended: true,
	jdItemWithEmptyAddedToOpen: true, jdItemAddedToClosed: true, jdItemFalseRemovedFromClose: true,
	jdItemRemovedFromOpen: true, jdItemAddedCovered: true, jdItemRemovedCovered: true,
	jdEnumArrayExtended:    true,
	jdCombinedTypeExtended: true, jdProductTypeNarrowed: true, jdSumTypeExtended: true, jdNotTypeNarrowed: true,
}

// jsDifference is one difference at a JSON pointer path ("#/properties/a").
type jsDifference struct {
	kind jsDiffKind
	path string
}

func (d jsDifference) compatible() bool { return jsCompatibleChanges[d.kind] }

// message is Confluent's verbose form: {errorType:"…", description:"…"},
// the description naming the path and which schema has what.
func (d jsDifference) message(readerRole, writerRole string) string {
	return fmt.Sprintf("{errorType:\"%s\", description:\"%s\"}", d.kind, d.describe(readerRole, writerRole))
}

func (d jsDifference) describe(r, w string) string {
	p := d.path
	k := string(d.kind)
	switch {
	case d.kind == jdTooComplex:
		return fmt.Sprintf("The schemas are too large to compare within %d steps; at path '%s' the check stopped", maxJSONCompareSteps, p)
	case strings.HasSuffix(k, "_ADDED") && !strings.Contains(k, "CONTENT_MODEL") && d.kind != jdSchemaAdded,
		d.kind == jdAdditionalItemsRemoved, d.kind == jdAdditionalPropertiesRemoved,
		d.kind == jdUnevaluatedPropertiesRemoved, d.kind == jdUnevaluatedItemsRemoved:
		return fmt.Sprintf("The keyword at path '%s' in the %s schema is not present in the %s schema", p, r, w)
	case strings.HasSuffix(k, "_INCREASED"), d.kind == "MULTIPLE_OF_EXPANDED":
		return fmt.Sprintf("The value at path '%s' in the %s schema is more than its value in the %s schema", p, r, w)
	case strings.HasSuffix(k, "_DECREASED"):
		return fmt.Sprintf("The value at path '%s' in the %s schema is less than its value in the %s schema", p, r, w)
	case d.kind == "PATTERN_CHANGED", d.kind == "MULTIPLE_OF_CHANGED", d.kind == jdDependencyArrayChanged:
		return fmt.Sprintf("The value at path '%s' is different between the %s and %s schema", p, r, w)
	case strings.HasSuffix(k, "_NARROWED") && d.kind != jdTypeNarrowed:
		return fmt.Sprintf("An array or combined type at path '%s' has fewer elements in the %s schema than the %s schema", p, r, w)
	case d.kind == jdDependencyArrayExtended, d.kind == jdProductTypeExtended, d.kind == jdSumTypeExtended, d.kind == jdNotTypeExtended:
		return fmt.Sprintf("An array or combined type at path '%s' has more elements in the %s schema than the %s schema", p, r, w)
	case d.kind == jdTypeChanged, d.kind == jdTypeNarrowed, d.kind == jdCombinedTypeChanged, d.kind == jdCombinedSubschemasChgd,
		d.kind == jdEnumArrayChanged, d.kind == jdSchemaAdded:
		return fmt.Sprintf("A type at path '%s' is different between the %s schema and the %s schema", p, r, w)
	case d.kind == jdRequiredPropertyAddedToOpen, d.kind == jdRequiredPropertyDefaultToOpen, d.kind == jdOptionalPropertyAddedToOpen, d.kind == jdItemAddedToOpen:
		return fmt.Sprintf("The %s schema has an open content model and has a property or item at path '%s' which is missing in the %s schema", r, p, w)
	case d.kind == jdRequiredPropertyAddedToUnopen:
		return fmt.Sprintf("The %s schema has an unopen content model and has a required property at path '%s' which is missing in the %s schema", r, p, w)
	case d.kind == jdPropertyRemovedFromClosed, d.kind == jdItemRemovedFromClosed:
		return fmt.Sprintf("The %s schema has a closed content model and is missing a property or item present at path '%s' in the %s schema", r, p, w)
	case d.kind == jdPropertyRemovedNotCovered, d.kind == jdItemRemovedNotCovered:
		return fmt.Sprintf("A property or item is missing in the %s schema but present at path '%s' in the %s schema and is not covered by its partially open content model", r, p, w)
	case d.kind == jdPropertyAddedNotCovered, d.kind == jdItemAddedNotCovered:
		return fmt.Sprintf("The %s schema has a property or item at path '%s' which is missing in the %s schema and is not covered by its partially open content model", r, p, w)
	}
	return fmt.Sprintf("%s at path '%s'", k, p)
}

// maxJSONCompareSteps bounds the schema pairs one check compares; combined
// schemas compare every old branch with every new one.
const maxJSONCompareSteps = 200000

type jsComparer struct {
	steps      int
	exhausted  bool
	inProgress map[[2]*jsNode]bool
}

// jsCtx collects the differences of one comparison at a path.
type jsCtx struct {
	c     *jsComparer
	path  []string
	diffs []jsDifference
}

func compareJSONSchemas(original, update *jsModel) []jsDifference {
	c := &jsComparer{inProgress: map[[2]*jsNode]bool{}}
	ctx := &jsCtx{c: c}
	c.compare(ctx, original.root, update.root)
	if c.exhausted {
		// The comparisons cut short looked compatible to whichever
		// sub-check ran them; the pair as a whole is not vouched for.
		ctx.diffs = append(ctx.diffs, jsDifference{kind: jdTooComplex, path: "#/"})
	}
	return ctx.diffs
}

func (x *jsCtx) sub() *jsCtx {
	return &jsCtx{c: x.c, path: append([]string(nil), x.path...)}
}

func (x *jsCtx) enter(elems ...string) func() {
	n := len(x.path)
	x.path = append(x.path, elems...)
	return func() { x.path = x.path[:n] }
}

func (x *jsCtx) add(kind jsDiffKind, elems ...string) {
	x.diffs = append(x.diffs, jsDifference{kind: kind, path: "#/" + strings.Join(append(append([]string(nil), x.path...), elems...), "/")})
}

func (x *jsCtx) compatible() bool {
	for _, d := range x.diffs {
		if !d.compatible() {
			return false
		}
	}
	return true
}

// kindClass groups kinds the way everit's classes do: true and {} are
// both "accepts anything".
func (c *jsComparer) compare(x *jsCtx, o, u *jsNode) {
	switch {
	case o == nil && u == nil:
		return
	case o == nil:
		x.add(jdSchemaAdded)
		return
	case u == nil:
		x.add(jdSchemaRemoved)
		return
	}
	if c.steps++; c.steps > maxJSONCompareSteps {
		c.exhausted = true
		return
	}
	o, u = deref(o), deref(u)
	if c.singletonOrSum(x, o, u) {
		return
	}
	if o.kind != u.kind {
		if o.kind != jsFalse && u.kind != jsEmpty {
			x.add(jdTypeChanged)
		}
		return
	}
	pair := [2]*jsNode{o, u}
	if c.inProgress[pair] { // a recursive schema met itself: judged higher up
		return
	}
	c.inProgress[pair] = true
	defer delete(c.inProgress, pair)
	compareAnnotation(x, o.id, u.id, jdIDChanged)
	compareAnnotation(x, o.title, u.title, jdTitleChanged)
	compareAnnotation(x, o.description, u.description, jdDescriptionChanged)
	compareAnnotation(x, o.def, u.def, jdDefaultChanged)
	switch o.kind {
	case jsString:
		compareBound(x, "maxLength", o.maxLength, u.maxLength)
		compareBound(x, "minLength", o.minLength, u.minLength)
		comparePattern(x, o.pattern, u.pattern)
	case jsNumber:
		compareNumbers(x, o, u)
	case jsEnum:
		compareEnums(x, o, u)
	case jsConst:
		if o.value != u.value {
			x.add(jdEnumArrayChanged, "const")
		}
	case jsCombined:
		c.compareCombined(x, o, u)
	case jsNot:
		defer x.enter("not")()
		sub := x.sub()
		c.compare(sub, u.not, o.not) // reversed: not narrows when its inside widens
		if sub.compatible() {
			x.add(jdNotTypeNarrowed)
		} else {
			x.add(jdNotTypeExtended)
		}
	case jsObject:
		c.compareObjects(x, o, u)
	case jsArray:
		c.compareArrays(x, o, u)
	}
}

// singletonOrSum handles a combined schema on one side only: a
// one-branch combination is its branch, and a non-combined schema that
// one branch of a new anyOf/oneOf reads is a widening.
func (c *jsComparer) singletonOrSum(x *jsCtx, o, u *jsNode) bool {
	switch {
	case o.kind != jsCombined && u.kind == jsCombined:
		if len(u.subs) == 1 {
			sub := x.sub()
			c.compare(sub, o, u.subs[0])
			if sub.compatible() {
				x.diffs = append(x.diffs, sub.diffs...)
				return true
			}
		} else if u.criterion == "anyOf" || u.criterion == "oneOf" {
			for _, s := range u.subs {
				sub := x.sub()
				c.compare(sub, o, s)
				if sub.compatible() {
					x.diffs = append(x.diffs, sub.diffs...)
					x.add(jdSumTypeExtended)
					return true
				}
			}
		}
	case o.kind == jsCombined && u.kind != jsCombined && len(o.subs) == 1:
		sub := x.sub()
		c.compare(sub, o.subs[0], u)
		if sub.compatible() {
			x.diffs = append(x.diffs, sub.diffs...)
			return true
		}
	case o.kind == jsCombined && u.kind != jsCombined && o.criterion == "allOf":
		// Dropping the other members of an allOf only widens it.
		for _, s := range o.subs {
			sub := x.sub()
			c.compare(sub, s, u)
			if sub.compatible() {
				x.diffs = append(x.diffs, sub.diffs...)
				x.add(jdProductTypeNarrowed)
				return true
			}
		}
	}
	return false
}

func compareAnnotation(x *jsCtx, o, u *string, kind jsDiffKind) {
	if (o == nil) != (u == nil) || o != nil && *o != *u {
		x.add(kind)
	}
}

func compareBound(x *jsCtx, keyword string, o, u *float64) {
	switch {
	case o == nil && u == nil:
	case o == nil:
		x.add(boundKind(keyword, "ADDED"), keyword)
	case u == nil:
		x.add(boundKind(keyword, "REMOVED"), keyword)
	case *o < *u:
		x.add(boundKind(keyword, "INCREASED"), keyword)
	case *o > *u:
		x.add(boundKind(keyword, "DECREASED"), keyword)
	}
}

func comparePattern(x *jsCtx, o, u *string) {
	switch {
	case o == nil && u == nil:
	case o == nil:
		x.add("PATTERN_ADDED", "pattern")
	case u == nil:
		x.add("PATTERN_REMOVED", "pattern")
	case *o != *u:
		x.add("PATTERN_CHANGED", "pattern")
	}
}

func compareNumbers(x *jsCtx, o, u *jsNode) {
	compareBound(x, "maximum", o.maximum, u.maximum)
	compareBound(x, "minimum", o.minimum, u.minimum)
	compareBound(x, "exclusiveMaximum", o.exclusiveMaximum, u.exclusiveMaximum)
	compareBound(x, "exclusiveMinimum", o.exclusiveMinimum, u.exclusiveMinimum)
	switch om, um := o.multipleOf, u.multipleOf; {
	case om == nil && um == nil:
	case om == nil:
		x.add("MULTIPLE_OF_ADDED", "multipleOf")
	case um == nil:
		x.add("MULTIPLE_OF_REMOVED", "multipleOf")
	case *om == *um:
	case isMultiple(*um, *om):
		x.add("MULTIPLE_OF_EXPANDED", "multipleOf")
	case isMultiple(*om, *um):
		x.add("MULTIPLE_OF_REDUCED", "multipleOf")
	default:
		x.add("MULTIPLE_OF_CHANGED", "multipleOf")
	}
	if o.integer != u.integer {
		if o.integer {
			x.add(jdTypeExtended)
		} else {
			x.add(jdTypeNarrowed)
		}
	}
}

// isMultiple reports whether a is a whole multiple of b.
func isMultiple(a, b float64) bool {
	if b == 0 {
		return false
	}
	q := a / b
	return !math.IsInf(q, 0) && q == math.Trunc(q)
}

func compareEnums(x *jsCtx, o, u *jsNode) {
	if strings.Join(o.values, "\x00") == strings.Join(u.values, "\x00") {
		return
	}
	switch {
	case containsAll(u.values, o.values):
		x.add(jdEnumArrayExtended, "enum")
	case containsAll(o.values, u.values):
		x.add(jdEnumArrayNarrowed, "enum")
	default:
		x.add(jdEnumArrayChanged, "enum")
	}
}

func containsAll(set, of []string) bool {
	have := map[string]bool{}
	for _, v := range set {
		have[v] = true
	}
	for _, v := range of {
		if !have[v] {
			return false
		}
	}
	return true
}

func (c *jsComparer) compareCombined(x *jsCtx, o, u *jsNode) {
	if criterionChange(x, o, u) == jdCombinedTypeChanged {
		return
	}
	os, us := distinctBranches(o.subs), distinctBranches(u.subs)
	switch {
	case len(os) < len(us) && u.criterion == "allOf":
		x.add(jdProductTypeExtended)
	case len(os) < len(us):
		x.add(jdSumTypeExtended)
	case len(os) > len(us) && o.criterion != "allOf":
		x.add(jdSumTypeNarrowed)
	case len(os) > len(us):
		x.add(jdProductTypeNarrowed)
	}
	// Which old branch is read by which new one: a maximum matching over
	// the compatible pairs, as Confluent's MaximumCardinalityMatch. A
	// branch kept word for word (and free of $refs, whose targets may
	// differ) pairs with its copy without a comparison, which keeps big
	// unchanged combinations from spending the step budget; the other
	// old branches are compared with every new one.
	edges := make([][]int, len(os))
	diffs := map[[2]int][]jsDifference{}
	same := identicalBranches(os, us)
	for i, ob := range os {
		if j, ok := same[i]; ok {
			edges[i] = []int{j}
			continue
		}
		done := x.enter(o.criterion + "/" + strconv.Itoa(i))
		for j, ub := range us {
			sub := x.sub()
			c.compare(sub, ob, ub)
			if sub.compatible() {
				edges[i] = append(edges[i], j)
				diffs[[2]int{i, j}] = sub.diffs
			}
		}
		done()
	}
	matchOf := maxMatching(edges, len(us))
	matched := 0
	for j, i := range matchOf {
		if i >= 0 {
			matched++
			x.diffs = append(x.diffs, diffs[[2]int{i, j}]...)
		}
	}
	if matched < min(len(os), len(us)) {
		x.add(jdCombinedSubschemasChgd)
	}
}

func criterionChange(x *jsCtx, o, u *jsNode) jsDiffKind {
	var kind jsDiffKind
	oneO, oneU := len(o.subs) == 1, len(u.subs) == 1
	switch {
	case o.criterion == u.criterion:
		return ""
	case u.criterion == "anyOf", oneO && oneU, oneO && u.criterion == "oneOf", oneU && o.criterion == "allOf":
		kind = jdCombinedTypeExtended
	default:
		kind = jdCombinedTypeChanged
	}
	x.add(kind)
	return kind
}

// distinctBranches drops branches that repeat an earlier one.
func distinctBranches(subs []*jsNode) []*jsNode {
	seen := map[string]bool{}
	var out []*jsNode
	for _, s := range subs {
		if !seen[s.canonical] {
			seen[s.canonical] = true
			out = append(out, s)
		}
	}
	return out
}

// identicalBranches pairs old branch i with new branch j when both are the
// same $ref-free JSON.
func identicalBranches(os, us []*jsNode) map[int]int {
	byText := map[string]int{}
	for j, u := range us {
		if u.canonical != "" && !strings.Contains(u.canonical, `"$ref"`) {
			byText[u.canonical] = j
		}
	}
	out := map[int]int{}
	for i, o := range os {
		if j, ok := byText[o.canonical]; ok && o.canonical != "" {
			out[i] = j
		}
	}
	return out
}

// maxMatching is Kuhn's augmenting paths over a bipartite graph: edges[i]
// lists the right vertices left vertex i may pair with. It returns, per
// right vertex, its left partner or -1.
func maxMatching(edges [][]int, right int) []int {
	matchOf := make([]int, right)
	for j := range matchOf {
		matchOf[j] = -1
	}
	for i := range edges {
		seen := make([]bool, right)
		var try func(int) bool
		try = func(i int) bool {
			for _, j := range edges[i] {
				if seen[j] {
					continue
				}
				seen[j] = true
				if matchOf[j] < 0 || try(matchOf[j]) {
					matchOf[j] = i
					return true
				}
			}
			return false
		}
		try(i)
	}
	return matchOf
}

func (c *jsComparer) compareObjects(x *jsCtx, o, u *jsNode) {
	compareRequired(x, o, u)
	c.compareProperties(x, o, u)
	c.compareDependencies(x, o, u)
	c.compareAdditionalProperties(x, o, u)
	c.compareUnevaluated(x, "unevaluatedProperties", o.unevaluated, u.unevaluated,
		[4]jsDiffKind{jdUnevaluatedPropertiesAdded, jdUnevaluatedPropertiesRemoved, jdUnevaluatedPropertiesExtended, jdUnevaluatedPropertiesNarrowed})
	compareBound(x, "maxProperties", o.maxProperties, u.maxProperties)
	compareBound(x, "minProperties", o.minProperties, u.minProperties)
}

func compareRequired(x *jsCtx, o, u *jsNode) {
	for _, name := range sortedNodeKeys(o.properties) {
		us, ok := u.properties[name]
		if !ok {
			continue
		}
		was, is := o.required[name], u.required[name]
		switch {
		case was && !is:
			x.add(jdRequiredAttributeRemoved, "required", name)
		case !was && is && us.def != nil:
			x.add(jdRequiredAttributeWithDefaultAdded, "required", name)
		case !was && is:
			x.add(jdRequiredAttributeAdded, "required", name)
		}
	}
}

func sortedNodeKeys(m map[string]*jsNode) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// openContentModel: no pattern properties, additionalProperties absent
// or true, and unevaluatedProperties absent or true.
func openContentModel(n *jsNode) bool {
	return len(n.patterns) == 0 && n.additional == nil && n.additionalAllowed && openOrAbsent(n.unevaluated)
}

func openOrAbsent(n *jsNode) bool { return n == nil || deref(n).kind == jsEmpty }

// restrictingSchema is an unevaluated* schema that is neither true nor
// false: it gives unnamed members a schema (nil otherwise).
func restrictingSchema(n *jsNode) *jsNode {
	if n == nil {
		return nil
	}
	if k := deref(n).kind; k == jsEmpty || k == jsFalse {
		return nil
	}
	return n
}

// partialSchema is the schema a partially open content model gives a
// property it does not name: the first matching pattern's, else the
// additionalProperties schema, else (additionalProperties absent) the
// unevaluatedProperties schema; nil when none.
func partialSchema(n *jsNode, name string) *jsNode {
	for _, p := range n.patterns {
		if p.re.MatchString(name) {
			return p.schema
		}
	}
	if n.additional != nil {
		return n.additional
	}
	if n.additionalAllowed {
		return restrictingSchema(n.unevaluated)
	}
	return nil
}

// compareUnevaluated compares unevaluatedProperties or unevaluatedItems;
// kinds are the added, removed, extended and narrowed difference types.
func (c *jsComparer) compareUnevaluated(x *jsCtx, keyword string, o, u *jsNode, kinds [4]jsDiffKind) {
	if o == nil && u == nil {
		return
	}
	defer x.enter(keyword)()
	isFalse := func(n *jsNode) bool { return n != nil && deref(n).kind == jsFalse }
	isEmpty := func(n *jsNode) bool { return n != nil && deref(n).kind == jsEmpty }
	added, removed, extended, narrowed := kinds[0], kinds[1], kinds[2], kinds[3]
	switch {
	case o == nil && isFalse(u):
		x.add(removed)
	case o == nil:
		x.add(narrowed)
	case u == nil && isFalse(o):
		x.add(added)
	case u == nil:
		x.add(extended)
	case isFalse(o) && !isFalse(u):
		x.add(added)
	case !isFalse(o) && isFalse(u):
		x.add(removed)
	case isEmpty(o) && !isEmpty(u):
		x.add(narrowed)
	case !isEmpty(o) && isEmpty(u):
		x.add(extended)
	default:
		c.compare(x, o, u)
	}
}

func (c *jsComparer) compareProperties(x *jsCtx, o, u *jsNode) {
	names := map[string]bool{}
	for k := range o.properties {
		names[k] = true
	}
	for k := range u.properties {
		names[k] = true
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, name := range keys {
		done := x.enter("properties", name)
		os, us := o.properties[name], u.properties[name]
		switch {
		case us == nil:
			c.propertyRemoved(x, os, u, name)
		case os == nil:
			c.propertyAdded(x, o, u, us, name)
		default:
			c.compare(x, os, us)
		}
		done()
	}
}

func (c *jsComparer) propertyRemoved(x *jsCtx, os, u *jsNode, name string) {
	if openContentModel(u) {
		x.add(jdPropertyRemovedFromOpen)
		return
	}
	if partial := partialSchema(u, name); partial != nil {
		sub := x.sub()
		c.compare(sub, os, partial)
		x.diffs = append(x.diffs, sub.diffs...)
		if sub.compatible() {
			x.add(jdPropertyRemovedCovered)
		} else {
			x.add(jdPropertyRemovedNotCovered)
		}
		return
	}
	if deref(os).kind == jsFalse {
		x.add(jdPropertyFalseRemovedFromClosed)
	} else {
		x.add(jdPropertyRemovedFromClosed)
	}
}

func (c *jsComparer) propertyAdded(x *jsCtx, o, u, us *jsNode, name string) {
	if openContentModel(o) {
		switch {
		case deref(us).kind == jsEmpty:
			x.add(jdPropertyWithEmptyAddedToOpen)
		case u.required[name] && us.def != nil:
			x.add(jdRequiredPropertyDefaultToOpen)
		case u.required[name]:
			x.add(jdRequiredPropertyAddedToOpen)
		default:
			x.add(jdOptionalPropertyAddedToOpen)
		}
		return
	}
	if partial := partialSchema(o, name); partial != nil {
		sub := x.sub()
		c.compare(sub, partial, us)
		x.diffs = append(x.diffs, sub.diffs...)
		if sub.compatible() {
			x.add(jdPropertyAddedCovered)
		} else {
			x.add(jdPropertyAddedNotCovered)
		}
	}
	switch {
	case u.required[name] && us.def != nil:
		x.add(jdRequiredPropertyDefaultToUnopen)
	case u.required[name]:
		x.add(jdRequiredPropertyAddedToUnopen)
	default:
		x.add(jdOptionalPropertyAddedToUnopen)
	}
}

func (c *jsComparer) compareDependencies(x *jsCtx, o, u *jsNode) {
	defer x.enter("dependencies")()
	names := unionKeys(o.propertyDeps, u.propertyDeps)
	for _, name := range names {
		od, ud := o.propertyDeps[name], u.propertyDeps[name]
		switch {
		case ud == nil:
			x.add(jdDependencyArrayRemoved, name)
		case od == nil:
			x.add(jdDependencyArrayAdded, name)
		case setsEqual(od, ud):
		case setContains(ud, od):
			x.add(jdDependencyArrayExtended, name)
		case setContains(od, ud):
			x.add(jdDependencyArrayNarrowed, name)
		default:
			x.add(jdDependencyArrayChanged, name)
		}
	}
	for _, name := range unionKeys(o.schemaDeps, u.schemaDeps) {
		os, us := o.schemaDeps[name], u.schemaDeps[name]
		switch {
		case us == nil:
			x.add(jdDependencySchemaRemoved, name)
		case os == nil:
			x.add(jdDependencySchemaAdded, name)
		default:
			done := x.enter(name)
			c.compare(x, os, us)
			done()
		}
	}
}

func unionKeys[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]V{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func setsEqual(a, b map[string]bool) bool { return len(a) == len(b) && setContains(a, b) }

func setContains(set, of map[string]bool) bool {
	for k := range of {
		if !set[k] {
			return false
		}
	}
	return true
}

func (c *jsComparer) compareAdditionalProperties(x *jsCtx, o, u *jsNode) {
	defer x.enter("additionalProperties")()
	switch {
	case o.additionalAllowed != u.additionalAllowed:
		if u.additionalAllowed {
			x.add(jdAdditionalPropertiesAdded)
		} else {
			x.add(jdAdditionalPropertiesRemoved)
		}
	case o.additional == nil && u.additional != nil:
		x.add(jdAdditionalPropertiesNarrowed)
	case o.additional != nil && u.additional == nil:
		x.add(jdAdditionalPropertiesExtended)
	default:
		c.compare(x, o.additional, u.additional)
	}
}

func (c *jsComparer) compareArrays(x *jsCtx, o, u *jsNode) {
	done := x.enter("items")
	c.compare(x, o.items, u.items)
	done()
	c.compareTuples(x, o, u)
	done = x.enter("additionalItems")
	switch {
	case o.additionalItemsAllowed != u.additionalItemsAllowed:
		if o.additionalItemsAllowed {
			x.add(jdAdditionalItemsRemoved)
		} else {
			x.add(jdAdditionalItemsAdded)
		}
	case o.additionalItems == nil && u.additionalItems != nil:
		x.add(jdAdditionalItemsNarrowed)
	case o.additionalItems != nil && u.additionalItems == nil:
		x.add(jdAdditionalItemsExtended)
	default:
		c.compare(x, o.additionalItems, u.additionalItems)
	}
	done()
	c.compareUnevaluated(x, "unevaluatedItems", o.unevaluatedItems, u.unevaluatedItems,
		[4]jsDiffKind{jdUnevaluatedItemsAdded, jdUnevaluatedItemsRemoved, jdUnevaluatedItemsExtended, jdUnevaluatedItemsNarrowed})
	compareBound(x, "maxItems", o.maxItems, u.maxItems)
	compareBound(x, "minItems", o.minItems, u.minItems)
	if o.unique != u.unique {
		if o.unique {
			x.add(jdUniqueItemsRemoved, "uniqueItems")
		} else {
			x.add(jdUniqueItemsAdded, "uniqueItems")
		}
	}
	compareBound(x, "maxContains", o.maxContains, u.maxContains)
	compareBound(x, "minContains", o.minContains, u.minContains)
}

// openItems: additionalItems absent or true, unevaluatedItems absent or
// true.
func openItems(n *jsNode) bool {
	return n.additionalItemsAllowed && n.additionalItems == nil && openOrAbsent(n.unevaluatedItems)
}

// partialItems is the schema a partially open tuple gives items past its
// end: additionalItems', else (absent) unevaluatedItems'; nil when none.
func partialItems(n *jsNode) *jsNode {
	if n.additionalItems != nil {
		return n.additionalItems
	}
	if n.additionalItemsAllowed {
		return restrictingSchema(n.unevaluatedItems)
	}
	return nil
}

func (c *jsComparer) compareTuples(x *jsCtx, o, u *jsNode) {
	for i := 0; i < max(len(o.tuple), len(u.tuple)); i++ {
		done := x.enter("items/" + strconv.Itoa(i))
		switch {
		case i < len(o.tuple) && i < len(u.tuple):
			c.compare(x, o.tuple[i], u.tuple[i])
		case i < len(o.tuple):
			c.itemRemoved(x, o.tuple[i], u)
		default:
			c.itemAdded(x, o, u.tuple[i])
		}
		done()
	}
}

func (c *jsComparer) itemRemoved(x *jsCtx, os, u *jsNode) {
	switch {
	case openItems(u):
		x.add(jdItemRemovedFromOpen)
	case partialItems(u) != nil:
		sub := x.sub()
		c.compare(sub, os, partialItems(u))
		x.diffs = append(x.diffs, sub.diffs...)
		if sub.compatible() {
			x.add(jdItemRemovedCovered)
		} else {
			x.add(jdItemRemovedNotCovered)
		}
	case deref(os).kind == jsFalse:
		x.add(jdItemFalseRemovedFromClose)
	default:
		x.add(jdItemRemovedFromClosed)
	}
}

func (c *jsComparer) itemAdded(x *jsCtx, o, us *jsNode) {
	switch {
	case openItems(o):
		if deref(us).kind == jsEmpty {
			x.add(jdItemWithEmptyAddedToOpen)
		} else {
			x.add(jdItemAddedToOpen)
		}
	case partialItems(o) != nil:
		sub := x.sub()
		c.compare(sub, partialItems(o), us)
		x.diffs = append(x.diffs, sub.diffs...)
		if sub.compatible() {
			x.add(jdItemAddedCovered)
		} else {
			x.add(jdItemAddedNotCovered)
		}
	default:
		x.add(jdItemAddedToClosed)
	}
}
